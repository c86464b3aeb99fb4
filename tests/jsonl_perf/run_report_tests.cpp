// The run report's blocks, each computed from requests.csv rows by the reference
// report's rules, and the page drawn from them.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "requests_table.hpp"
#include "run_blocks.hpp"
#include "run_report.hpp"
#include "svg_charts.hpp"

namespace {

using namespace jsonl_perf::report;

// A completed request from `started` to `finished` (seconds), its TTFT in ms.
Request completed(double started, double finished, double ttft_ms = 10, double osl = 20, double isl_new = 100) {
  Request request{.trace_id = "tr_" + std::to_string(started), .route = "/v1/chat/completions", .stream = true,
                  .status = "completed", .session = "s_" + std::to_string(started)};
  request.started = started;
  request.finished = finished;
  request.e2e_ms = (finished - started) * 1000;
  request.ttft_ms = ttft_ms;
  request.decode_ms = *request.e2e_ms - ttft_ms;
  request.osl = osl;
  request.isl_new = isl_new;
  return request;
}

const Headline& headline(const std::vector<Headline>& rows, const std::string& label) {
  for (const Headline& row : rows) {
    if (row.label == label) return row;
  }
  BOOST_FAIL("no headline " + label);
  return rows.front();
}

const Phase* phase(const std::vector<Phase>& rows, const std::string& starts_with) {
  for (const Phase& row : rows) {
    if (row.label.starts_with(starts_with)) return &row;
  }
  return nullptr;
}

// A run whose window is 30 s to 250 s: whole minutes 60-120 (two finishes), 120-180
// (none) and 180-240 (one); finishes at 50 and 250 fall in the partial minutes.
std::vector<Request> run_over_four_minutes() {
  return {completed(30, 50), completed(55, 70), completed(61, 100), completed(150, 190), completed(200, 250)};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(run_report)

BOOST_AUTO_TEST_CASE(a_percentile_is_the_value_at_the_nearest_rank_halves_to_even) {
  const Spread s = spread({5, 1, 4, 2, 3, 6});
  BOOST_TEST(s.n == 6u);
  BOOST_TEST(*s.mean == 3.5);
  // q (n - 1): 0.5, 1.25, 2.5, 3.75, 4.5, 4.95 round to 0, 1, 2, 4, 4, 5.
  BOOST_TEST(*s.p10 == 1);
  BOOST_TEST(*s.p25 == 2);
  BOOST_TEST(*s.p50 == 3);
  BOOST_TEST(*s.p75 == 5);
  BOOST_TEST(*s.p90 == 5);
  BOOST_TEST(*s.p99 == 6);
  BOOST_TEST(*s.max == 6);
  BOOST_TEST(!spread({}).p50.has_value());
}

BOOST_AUTO_TEST_CASE(whole_minutes_of_finish_drop_the_first_and_last_partial_minutes) {
  const std::vector<Minute> minutes = whole_minutes(run_over_four_minutes());
  BOOST_TEST_REQUIRE(minutes.size() == 3u);
  BOOST_TEST(minutes[0].start == 60);
  BOOST_TEST(minutes[0].requests == 2u);
  BOOST_TEST(minutes[1].requests == 0u);
  BOOST_TEST(minutes[2].requests == 1u);
  BOOST_TEST(minutes[0].e2e_s == 15 + 39);
}

BOOST_AUTO_TEST_CASE(an_empty_minute_is_no_throughput_and_left_out_of_sums_over_e2e) {
  const std::vector<Headline> rows = headlines(run_over_four_minutes(), 1);
  const Headline& requests = headline(rows, "Requests / s / instance");
  BOOST_TEST(requests.per_minute);
  BOOST_TEST(requests.spread.n == 3u);
  BOOST_TEST(*requests.spread.p10 == 0);
  BOOST_TEST(headline(rows, "Σ output tokens / Σ E2E").spread.n == 2u);
}

BOOST_AUTO_TEST_CASE(a_minute_rows_mean_is_the_whole_windows_value) {
  const std::vector<Headline> rows = headlines(run_over_four_minutes(), 2);
  // Five completed requests over 220 s and two instances; every request's tokens over
  // every request's E2E, the partial minutes' included.
  BOOST_TEST(*headline(rows, "Requests / s / instance").spread.mean == 5.0 / 220 / 2);
  BOOST_TEST(*headline(rows, "Σ output tokens / Σ E2E").spread.mean == 5 * 20.0 / (20 + 15 + 39 + 40 + 50));
  BOOST_TEST(*headline(rows, "Output tokens / s / instance").spread.mean == 5 * 20.0 / 220 / 2);
}

BOOST_AUTO_TEST_CASE(tps_per_user_counts_tokens_after_the_first_over_the_time_after_it) {
  std::vector<Request> requests = {completed(0, 2, 1000, 11), completed(0, 1, 100, 1), completed(0, 1.5, 500, 2)};
  const std::vector<Headline> rows = headlines(requests, 1);
  const Headline& tps = headline(rows, "TPS / user");
  BOOST_TEST(tps.spread.n == 2u);  // one output token has no time between tokens
  BOOST_TEST(*tps.spread.p10 == 1.0);
  BOOST_TEST(*tps.spread.max == 10.0);
}

BOOST_AUTO_TEST_CASE(a_per_request_row_spreads_each_completed_requests_value) {
  std::vector<Request> requests = {completed(0, 0.5, 10, 20), completed(0, 2, 10, 20), completed(0, 4, 10, 20)};
  requests[2].status = "error";
  const std::vector<Headline> rows = headlines(requests, 1);
  BOOST_TEST(headline(rows, "E2E latency").spread.n == 2u);
  BOOST_TEST(*headline(rows, "E2E latency").spread.max == 2000);
  BOOST_TEST(*headline(rows, "Output tokens / E2E").spread.p10 == 10);  // 20 tokens over 2 s
  BOOST_TEST(*headline(rows, "(ISL new + OSL) / E2E").spread.max == 240);  // 120 tokens over 0.5 s
  BOOST_TEST(!headline(rows, "E2E latency").per_minute);
}

BOOST_AUTO_TEST_CASE(each_column_is_read_into_its_field_and_a_number_that_is_not_finite_as_missing) {
  const std::vector<std::string>& columns = jsonl_perf::requests_table_columns();
  std::vector<boost::json::value> row;
  for (std::size_t i = 0; i < columns.size(); ++i) row.emplace_back(static_cast<double>(i));
  const auto at = [&](const std::string& name) {
    return static_cast<double>(std::find(columns.begin(), columns.end(), name) - columns.begin());
  };
  row[static_cast<std::size_t>(at("route"))] = "/v1/completions";
  row[static_cast<std::size_t>(at("stream"))] = false;
  row[static_cast<std::size_t>(at("osl"))] = std::numeric_limits<double>::quiet_NaN();
  row[static_cast<std::size_t>(at("isl_total"))] = std::numeric_limits<double>::infinity();
  jsonl_perf::RequestsTable table;
  table.rows.push_back(row);
  const Request request = requests_of(table, {}).at(0);
  BOOST_TEST(request.route == "/v1/completions");
  BOOST_TEST(*request.stream == false);
  BOOST_TEST(!request.osl.has_value());
  BOOST_TEST(!request.isl_total.has_value());
  const std::vector<std::pair<std::string, std::optional<double>>> fields = {
      {"started_at", request.started},       {"finished_at", request.finished},
      {"parse_ms", request.parse_ms},        {"proxy_dispatch_ms", request.proxy_dispatch_ms},
      {"ttft_ms", request.ttft_ms},          {"e2e_ms", request.e2e_ms},
      {"decode_ms", request.decode_ms},      {"prefill_queue_ms", request.prefill_queue_ms},
      {"prefill_ms", request.prefill_ms},    {"kv_transfer_ms", request.kv_transfer_ms},
      {"gen_decode_ms", request.gen_decode_ms}, {"isl_cached", request.isl_cached},
      {"isl_new", request.isl_new},          {"cache_hit_ratio", request.cache_hit_ratio}};
  for (const auto& [name, value] : fields) BOOST_TEST(value.value_or(-1) == at(name), name);
}

BOOST_AUTO_TEST_CASE(tokens_and_routes_are_spread_over_completed_requests_by_route_and_kind) {
  std::vector<Request> requests = {completed(0, 1, 10, 8), completed(0, 1, 10, 16), completed(0, 1, 10, 32)};
  requests[1].stream = false;
  requests[2].route = "/v1/responses";
  requests[2].stream.reset();
  requests.push_back({.route = "/v1/chat/completions", .stream = true, .status = "rejected_400"});
  BOOST_TEST(tokens(requests)[3].label == "OSL");
  BOOST_TEST(tokens(requests)[3].spread.n == 3u);
  const std::vector<Breakdown> routes = by_route_and_kind(requests);
  BOOST_TEST_REQUIRE(routes.size() == 3u);
  BOOST_TEST(routes[0].kind == "streamed");
  BOOST_TEST(routes[0].requests == 2u);
  BOOST_TEST(routes[0].completed == 1u);
  BOOST_TEST(*routes[0].osl.p50 == 8);
  BOOST_TEST(routes[1].kind == "whole");
  BOOST_TEST(routes[2].route == "/v1/responses");
  BOOST_TEST(routes[2].kind == "unknown");
}

BOOST_AUTO_TEST_CASE(ttft_and_decode_share_e2e_between_them) {
  const std::vector<Phase> rows = phases({completed(0, 1, 300), completed(0, 3, 100), completed(0, 2, 1500)});
  BOOST_TEST(*phase(rows, "E2E")->share_of_e2e == 1.0);
  BOOST_TEST(phase(rows, "TTFT")->depth == 1);
  BOOST_TEST(phase(rows, "Decode (")->depth == 1);
  BOOST_TEST(*phase(rows, "TTFT")->share_of_e2e + *phase(rows, "Decode (")->share_of_e2e == 1.0,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(*phase(rows, "TTFT")->share_of_e2e == 1.9 / 6, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_phase_shares_e2e_only_over_the_requests_that_have_it) {
  std::vector<Request> requests = {completed(0, 0.1), completed(0, 0.3)};
  requests[0].prefill_ms = 10;
  const std::vector<Phase> rows = phases(requests);
  BOOST_TEST(phase(rows, "Prefill (")->spread.n == 1u);
  BOOST_TEST(phase(rows, "Prefill (")->depth == 2);
  requests[1].parse_ms = 1;
  BOOST_TEST(phase(phases(requests), "Body read")->depth == 2);  // inside TTFT, which starts at arrival
  BOOST_TEST(*phase(rows, "Prefill (")->share_of_e2e == 0.1, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(phase(rows, "KV transfer") == nullptr);  // no request has it: no row
  BOOST_TEST(hops(requests).empty());                  // nor hops, on an aggregated run
}

BOOST_AUTO_TEST_CASE(a_disaggregated_run_has_each_hops_part_of_e2e) {
  std::vector<Request> requests = {completed(0, 1, 400)};
  requests[0].proxy_dispatch_ms = 5;
  requests[0].prefill_queue_ms = 15;
  requests[0].prefill_ms = 300;
  requests[0].kv_transfer_ms = 50;
  requests[0].gen_decode_ms = 450;
  const std::vector<Phase> rows = hops(requests);
  BOOST_TEST_REQUIRE(rows.size() == 3u);
  BOOST_TEST(*rows[0].share_of_e2e == 0.005, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(*rows[1].spread.p50 == 315);
  BOOST_TEST(*rows[2].spread.p50 == 500);
}

BOOST_AUTO_TEST_CASE(the_instance_counts_each_span_from_its_start_up_to_its_end_once_a_second) {
  Request a = completed(10.0, 11.5, 500);
  a.prefill_ms = 200;  // prefill 10.3-10.5, decode 10.5-11.5
  a.session = "s1";
  Request b = completed(10.2, 11.0);
  b.ttft_ms.reset();
  Request d = completed(13.0, 14.0, 100);  // the conversation's next turn, after a gap
  d.session = "s1";
  Request refused{.trace_id = "tr_refused", .status = "rejected_400", .session = "s3"};
  refused.started = 12.0;
  refused.finished = 12.5;
  const std::vector<Occupancy> samples = occupancy({a, b, d, refused});
  BOOST_TEST_REQUIRE(samples.size() == 5u);  // at 10, 11, 12, 13 and 14 s
  const std::vector<std::vector<std::size_t>> expected = {
      {1, 1, 0, 0}, {1, 1, 0, 1}, {1, 0, 0, 0}, {1, 1, 0, 0}, {0, 0, 0, 0}};
  for (std::size_t k = 0; k < samples.size(); ++k) {
    BOOST_TEST(samples[k].at == static_cast<double>(k));
    BOOST_TEST(std::vector<std::size_t>({samples[k].conversations, samples[k].in_flight, samples[k].in_prefill,
                                         samples[k].in_decode}) == expected[k],
               boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(the_instance_is_sampled_at_whole_seconds_and_timed_from_the_first_arrival) {
  Request refused{.trace_id = "tr_refused", .status = "rejected_400"};
  refused.started = 10.1;
  const std::vector<Occupancy> samples = occupancy({completed(10.4, 12.6), refused});
  BOOST_TEST_REQUIRE(samples.size() == 2u);  // at 11 and 12 s
  BOOST_TEST(samples[0].at == 0.9, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(samples[0].in_flight == 1u);
  BOOST_TEST(samples[1].in_flight == 1u);
  BOOST_TEST(occupancy({completed(10.2, 10.8)}).empty());  // no whole second inside it
}

BOOST_AUTO_TEST_CASE(prefill_is_counted_in_the_second_it_spans) {
  Request slow = completed(20.0, 23.0, 2500);
  slow.prefill_ms = 2000;  // prefill 20.5-22.5
  const std::vector<Occupancy> samples = occupancy({slow});
  BOOST_TEST_REQUIRE(samples.size() == 4u);
  BOOST_TEST(samples[0].in_prefill == 0u);
  BOOST_TEST(samples[1].in_prefill == 1u);
  BOOST_TEST(samples[2].in_prefill == 1u);
  BOOST_TEST(samples[3].in_decode == 0u);
}

BOOST_AUTO_TEST_CASE(latency_is_grouped_by_the_window_a_response_ended_in) {
  const std::vector<LatencyWindow> windows =
      latency_over_time({completed(0, 0.2, 5), completed(0, 0.9, 7), completed(1.5, 2.5, 9)});
  BOOST_TEST_REQUIRE(windows.size() == 2u);
  BOOST_TEST(windows[0].at == 0);
  BOOST_TEST(windows[0].requests == 2u);
  BOOST_TEST(windows[1].at == 2);
  BOOST_TEST(*windows[1].ttft.p50 == 9);
}

BOOST_AUTO_TEST_CASE(latency_windows_widen_to_keep_a_long_run_at_most_120) {
  std::vector<Request> minutes, hours;
  for (int second = 0; second <= 120; ++second) minutes.push_back(completed(0, second));
  BOOST_TEST(latency_over_time(minutes).front().width == 5);  // 1 s windows would be 121
  for (int minute = 0; minute <= 180; ++minute) hours.push_back(completed(0, minute * 60.0));
  const std::vector<LatencyWindow> windows = latency_over_time(hours);
  BOOST_TEST(windows.front().width == 300);
  BOOST_TEST(windows.size() <= 120u);
}

BOOST_AUTO_TEST_CASE(the_clients_view_is_its_e2e_less_the_servers_per_request) {
  std::vector<Request> requests = {completed(0, 0.1), completed(0, 0.2), completed(0, 0.3)};
  requests[0].client_e2e_ms = 101;
  requests[1].client_e2e_ms = 203;
  const ClientView view = client_view(requests);
  BOOST_TEST(view.difference.n == 2u);  // the third had no client result
  BOOST_TEST(*view.difference.max == 3, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(*view.client_e2e.max == 203);
}

BOOST_AUTO_TEST_CASE(requests_that_did_not_complete_are_counted_by_cause_the_servers_first) {
  std::vector<Request> requests = {completed(0, 1), completed(0, 1)};
  requests[0].status = "client_disconnected";
  requests.push_back({.status = "rejected_400", .validation_errors = "body.messages: Field required"});
  requests.push_back({.status = "rejected_400", .validation_errors = "body.messages: Field required"});
  const std::vector<Cause> causes = refusals_and_errors(requests, {{"HTTP 503", 4}, {"timeout", 1}});
  BOOST_TEST_REQUIRE(causes.size() == 4u);
  BOOST_TEST(causes[0].seen_by == "server");
  BOOST_TEST(causes[0].cause == "rejected_400: body.messages: Field required");
  BOOST_TEST(causes[0].requests == 2u);
  BOOST_TEST(causes[1].cause == "client_disconnected");
  BOOST_TEST(causes[2].seen_by == "client");
  BOOST_TEST(causes[2].cause == "HTTP 503");
}

BOOST_AUTO_TEST_CASE(the_page_draws_every_datum_and_loads_nothing_from_elsewhere) {
  std::vector<Request> requests = run_over_four_minutes();
  requests[0].client_e2e_ms = 20001;
  const std::string page =
      run_report_html({.title = "run <1>", .requests = requests, .client_results = true, .client_failures = {{"timeout", 1}}});
  BOOST_TEST(page.starts_with("<!DOCTYPE html>"));
  BOOST_TEST(page.find("run &lt;1&gt;") != std::string::npos);
  for (const char* outside : {"<script", "http:", "https:", "url(", "@import", "<link", "<img"}) {
    BOOST_TEST(page.find(outside) == std::string::npos, outside);
  }
  for (const char* block : {"metrics", "occupancy", "phases", "tokens", "routes", "client", "causes"}) {
    BOOST_TEST(page.find("data-block=\"" + std::string(block) + "\"") != std::string::npos, block);
  }
  const std::string opening = "<svg class=\"chart\" data-points=\"";
  std::size_t charts = 0;
  for (std::size_t at = page.find(opening); at != std::string::npos; at = page.find(opening, at + 1)) {
    ++charts;
    const std::size_t claimed = std::stoul(page.substr(at + opening.size()));
    const std::size_t end = page.find("</svg>", at);
    std::size_t drawn = 0;
    for (std::size_t point = page.find("class=\"point\"", at); point < end; point = page.find("class=\"point\"", point + 1)) {
      ++drawn;
    }
    BOOST_TEST(claimed == drawn);
    BOOST_TEST(drawn > 0u);
  }
  BOOST_TEST(charts == 5u);  // occupancy, TTFT and E2E over time, TTFT and E2E histograms
}

BOOST_AUTO_TEST_CASE(time_runs_evenly_along_a_line_chart_whatever_its_span) {
  jsonl_perf::charts::Series line{"in flight", {}};
  for (int second = 0; second <= 100; ++second) line.points.emplace_back(0.3 + second, 1);
  const std::string chart = jsonl_perf::charts::line_chart("t", {line}, "s", "requests");
  for (const char* tick : {">20</text>", ">40</text>", ">60</text>", ">80</text>", ">100</text>"}) {
    BOOST_TEST(chart.find(tick) != std::string::npos, tick);
  }
}

BOOST_AUTO_TEST_CASE(a_long_series_is_drawn_as_the_peak_of_each_run_of_neighbours) {
  jsonl_perf::charts::Series line{"in flight", {}};
  for (int second = 0; second < 6000; ++second) line.points.emplace_back(second, second == 3333 ? 50 : 1);
  const std::string chart = jsonl_perf::charts::line_chart("t", {line}, "s", "requests");
  BOOST_TEST(chart.find("data-points=\"600\"") != std::string::npos);
  BOOST_TEST(chart.find(": 50</title>") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_run_without_requests_is_a_page_that_says_so) {
  const std::string page = run_report_html({.title = "empty"});
  BOOST_TEST(page.find("data-points=\"0\"") == std::string::npos);
  BOOST_TEST(page.find("No request.") != std::string::npos);
  BOOST_TEST(page.find("No data.") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
