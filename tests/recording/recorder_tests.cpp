// The recording layer without HTTP: what each call of RequestRecorder stamps and hands to
// its destination, the ids the reference's analysis joins on, and what it does with a
// destination that refuses.
#define BOOST_TEST_MODULE recording
#include <boost/test/unit_test.hpp>

#include <barrier>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "recording.hpp"

using namespace recording_test;

namespace {

std::chrono::system_clock::time_point wall_now() { return std::chrono::system_clock::now(); }

const RequestLine& request_line(const TraceLine& line) { return std::get<RequestLine>(line); }

}  // namespace

BOOST_AUTO_TEST_SUITE(recorder)

BOOST_AUTO_TEST_CASE(arrive_stamps_the_server_arrival_on_the_steady_clock) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  const double before = steady_seconds();
  RequestRecorder::Request request = recorder->arrive("/v1/chat/completions", chat_headers);
  const double after = steady_seconds();
  recorder->accept(request, chat_text, chat_body);

  const RequestLine& line = request_line(handed->lines.at(0));
  BOOST_TEST(line.server_arrival_time >= before);
  BOOST_TEST(line.server_arrival_time <= after);
}

BOOST_AUTO_TEST_CASE(accept_hands_over_the_request_line_accepted_with_the_wall_time_of_acceptance) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  RequestRecorder::Request request = recorder->arrive("/v1/chat/completions", chat_headers);
  const auto before = wall_now();
  recorder->accept(request, chat_text, chat_body);
  const auto after = wall_now();

  BOOST_REQUIRE_EQUAL(handed->lines.size(), 1u);
  const RequestLine& line = request_line(handed->lines[0]);
  BOOST_TEST(line.status == "accepted");
  BOOST_TEST(line.route == "/v1/chat/completions");
  BOOST_TEST((line.recorded_at >= before && line.recorded_at <= after));
  BOOST_TEST(line.body == chat_text);
  BOOST_TEST(line.headers.size() == chat_headers.size());
  BOOST_TEST(line.trace_id.starts_with("tr_"));
  BOOST_TEST(line.session == "conv_7_a");
}

BOOST_AUTO_TEST_CASE(the_response_lines_client_id_is_the_perf_records_request_id) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  streamed_request(*recorder, 41);

  const auto lines = handed->parsed_lines();
  BOOST_REQUIRE_EQUAL(lines.size(), 2u);
  BOOST_REQUIRE_EQUAL(handed->records.size(), 1u);
  BOOST_TEST(lines[1].at("client_id").as_int64() == 41);
  BOOST_TEST(std::get<std::int64_t>(handed->records[0].request_id) == 41);
  BOOST_TEST(lines[0].at("trace_id") == lines[1].at("trace_id"));
  BOOST_TEST(lines[0].at("session") == lines[1].at("session"));
}

BOOST_AUTO_TEST_CASE(an_aggregated_servers_disagg_request_id_is_the_engine_id_unless_told_null) {
  auto handed = std::make_shared<Handed>();
  streamed_request(*keeping_recorder(handed), 41);
  auto handed_null = std::make_shared<Handed>();
  streamed_request(*keeping_recorder(handed_null, {.engine_id_as_disagg_request_id = false}), 41);

  BOOST_TEST(handed->parsed_lines()[1].at("disagg_request_id").as_int64() == 41);
  BOOST_TEST(handed_null->parsed_lines()[1].at("disagg_request_id").is_null());
  BOOST_TEST(!handed_null->records.at(0).disagg_request_id.has_value());
}

BOOST_AUTO_TEST_CASE(a_workers_lines_and_record_carry_the_proxys_id_and_the_context_workers) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  RequestRecorder::Request request = recorder->arrive("/v1/completions", chat_headers);
  recorder->accept(request, chat_text, chat_body);
  recorder->finish(request, Outcome::completed,
                   EngineReport{.request_id = 5, .disagg_request_id = 9000, .ctx_request_id = 77});

  const json::object response = handed->parsed_lines().at(1);
  BOOST_TEST(response.at("client_id").as_int64() == 5);
  BOOST_TEST(response.at("disagg_request_id").as_int64() == 9000);
  BOOST_TEST(response.at("ctx_request_id").as_int64() == 77);
  const jsonl::perf::PerfMetricsRecord& record = handed->records.at(0);
  BOOST_TEST(std::get<std::int64_t>(*record.disagg_request_id) == 9000);
  BOOST_TEST(std::get<std::int64_t>(*record.ctx_request_id) == 77);
}

BOOST_AUTO_TEST_CASE(a_proxy_names_its_own_id_and_writes_the_disagg_record_with_each_hop) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed, {.server_kind = "disagg"});
  RequestRecorder::Request request = recorder->arrive("/v1/chat/completions", chat_headers);
  recorder->accept(request, chat_text, chat_body);
  recorder->finish(request, Outcome::completed,
                   ProxyReport{.disagg_request_id = 9000, .ctx_request_id = 77, .ctx_server = "127.0.0.1:1",
                               .gen_server = "127.0.0.1:2", .ctx_dispatch_time = 3,
                               .ctx = HopTimes{.arrival_time = 4}, .gen = std::nullopt});

  const json::object response = handed->parsed_lines().at(1);
  BOOST_TEST(response.at("client_id").as_int64() == 9000);
  BOOST_TEST(response.at("disagg_request_id").as_int64() == 9000);
  BOOST_TEST(response.at("ctx_request_id").as_int64() == 77);
  const jsonl::perf::PerfMetricsRecord& record = handed->records.at(0);
  BOOST_TEST(std::get<std::string>(record.request_id) == "9000");
  BOOST_REQUIRE(record.phases.disagg.has_value());
  BOOST_TEST(record.phases.disagg->ctx_server == "127.0.0.1:1");
  BOOST_TEST(*record.phases.ctx->timing_metrics->arrival_time == 4.0);
  BOOST_TEST(!record.phases.gen.has_value());
}

BOOST_AUTO_TEST_CASE(a_rejected_request_leaves_its_request_line_and_never_a_response_line) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  RequestRecorder::Request request = recorder->arrive("/v1/chat/completions", chat_headers);
  recorder->reject_unparsed(
      request, "{\"model\":", "cut short",
      json::array{json::object{{"loc", json::array{"body", 9}}, {"type", "json_invalid"}, {"msg", "cut"}}});
  recorder->finish(request, Outcome::completed, EngineReport{.request_id = 1});

  const auto lines = handed->parsed_lines();
  BOOST_REQUIRE_EQUAL(lines.size(), 1u);
  BOOST_TEST(lines[0].at("status") == "rejected_400");
  BOOST_TEST(lines[0].at("validation_errors").as_array().size() == 1u);
  BOOST_TEST(lines[0].at("body_parse_error") == "cut short");
  BOOST_TEST(handed->records.empty());
}

BOOST_AUTO_TEST_CASE(a_rejected_requests_errors_are_briefed_with_every_loc_part_a_string) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  RequestRecorder::Request request = recorder->arrive("/v1/chat/completions", chat_headers);
  recorder->reject_unparsed(request, "{\"model\":", "cut short",
                   json::array{json::object{{"type", "json_invalid"}, {"loc", json::array{"body", 9}},
                                            {"msg", "cut"}, {"input", "{\"model\":"}},
                               json::object{{"loc", json::array{"body", "messages", 0, true}}, {"type", "missing"}},
                               "not an error object"});

  BOOST_TEST(json::serialize(handed->parsed_lines().at(0).at("validation_errors")) ==
             R"([{"loc":["body","9"],"type":"json_invalid","msg":"cut"},)"
             R"({"loc":["body","messages","0","True"],"type":"missing","msg":""}])");
}

BOOST_AUTO_TEST_CASE(header_names_are_recorded_in_lower_case_in_their_order_with_repeats) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  RequestRecorder::Request request = recorder->arrive(
      "/v1/chat/completions", {{"Content-Type", "application/json"}, {"X-Forwarded-For", "A"}, {"x-forwarded-for", "B"}});
  recorder->accept(request, chat_text, chat_body);

  BOOST_TEST(json::serialize(handed->parsed_lines().at(0).at("headers")) ==
             R"([["content-type","application/json"],["x-forwarded-for","A"],["x-forwarded-for","B"]])");
}

BOOST_AUTO_TEST_CASE(an_answer_not_streamed_that_never_went_out_is_recorded_as_json_null) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  RequestRecorder::Request request = recorder->arrive("/v1/completions", chat_headers);
  recorder->accept(request, chat_text, chat_body);
  recorder->finish(request, Outcome::error, EngineReport{.request_id = 1}, std::nullopt,
                   Termination{"server_shutdown", "the server stopped before the answer began"});

  BOOST_TEST(json::serialize(handed->parsed_lines().at(1).at("response")) == R"({"kind":"json","body":null})");
}

BOOST_AUTO_TEST_CASE(a_hang_up_and_an_error_end_as_the_reference_spells_them_without_a_perf_record) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  for (const auto& [outcome, cause] : {std::pair{Outcome::client_disconnected, "client_disconnected"},
                                       std::pair{Outcome::error, "server_shutdown"}}) {
    RequestRecorder::Request request = recorder->arrive("/v1/chat/completions", chat_headers);
    recorder->accept(request, chat_text, chat_body);
    recorder->sent(request, "data: {}\n\n");
    recorder->finish(request, outcome, EngineReport{.request_id = 3}, std::nullopt, Termination{cause, "why"});
  }

  const auto lines = handed->parsed_lines();
  BOOST_REQUIRE_EQUAL(lines.size(), 4u);
  BOOST_TEST(lines[1].at("status") == "client_disconnected");
  BOOST_TEST(lines[1].at("termination").at("cause") == "client_disconnected");
  BOOST_TEST(lines[3].at("status") == "error");
  BOOST_TEST(lines[3].at("termination").at("detail") == "why");
  BOOST_TEST(handed->records.empty());
}

BOOST_AUTO_TEST_CASE(an_answer_not_converted_is_a_conversion_error_with_the_engines_answer_and_its_record) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  RequestRecorder::Request request = recorder->arrive("/v1/messages", chat_headers);
  recorder->accept(request, chat_text, chat_body);
  recorder->finish(request, Outcome::conversion_error, EngineReport{.request_id = 4},
                   json::value{{"upstream_body", "{\"choices\":[]}"}});

  const auto lines = handed->parsed_lines();
  BOOST_REQUIRE_EQUAL(lines.size(), 2u);
  BOOST_TEST(lines[1].at("status") == "conversion_error");
  BOOST_TEST(lines[1].at("response").at("body").at("upstream_body") == "{\"choices\":[]}");
  BOOST_TEST(handed->records.size() == 1u);  // the engine finished it
}

BOOST_AUTO_TEST_CASE(streamed_frames_are_one_sse_text_body_and_an_answer_sent_whole_is_json) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  streamed_request(*recorder, 1, 3);
  RequestRecorder::Request whole = recorder->arrive("/v1/completions", chat_headers);
  recorder->accept(whole, chat_text, chat_body);
  recorder->finish(whole, Outcome::completed, EngineReport{.request_id = 2}, json::value{{"id", "cmpl-2"}});

  const auto lines = handed->parsed_lines();
  BOOST_TEST(lines[1].at("response").at("kind") == "sse_text");
  BOOST_TEST(lines[1].at("response").at("body") == "data: {\"n\":0}\n\ndata: {\"n\":1}\n\ndata: {\"n\":2}\n\n");
  BOOST_TEST(lines[3].at("response").at("kind") == "json");
  BOOST_TEST(lines[3].at("response").at("body").at("id") == "cmpl-2");
}

BOOST_AUTO_TEST_CASE(finish_stamps_the_first_token_when_no_call_did_and_keeps_one_that_did) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  RequestRecorder::Request unstamped = recorder->arrive("/v1/completions", chat_headers);
  recorder->accept(unstamped, chat_text, chat_body);
  const double before_finish = steady_seconds();
  recorder->finish(unstamped, Outcome::completed, EngineReport{.request_id = 1});

  RequestRecorder::Request stamped = recorder->arrive("/v1/completions", chat_headers);
  recorder->accept(stamped, chat_text, chat_body);
  recorder->first_token(stamped);
  const double after_first_token = steady_seconds();
  recorder->first_token(stamped);  // a later call keeps the first stamp
  recorder->finish(stamped, Outcome::completed, EngineReport{.request_id = 2});

  const auto& first = *handed->records.at(0).phases.server->timing_metrics;
  const auto& second = *handed->records.at(1).phases.server->timing_metrics;
  BOOST_TEST(*first.server_first_token_time >= before_finish);
  BOOST_TEST(*second.server_first_token_time <= after_first_token);
  BOOST_TEST(*second.server_first_token_time >= *second.server_arrival_time);
}

BOOST_AUTO_TEST_CASE(a_request_finished_twice_is_recorded_once) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  RequestRecorder::Request request = recorder->arrive("/v1/completions", chat_headers);
  recorder->accept(request, chat_text, chat_body);
  recorder->finish(request, Outcome::completed, EngineReport{.request_id = 1});
  recorder->finish(request, Outcome::error, EngineReport{.request_id = 1});

  BOOST_TEST(handed->lines.size() == 2u);
  BOOST_TEST(handed->records.size() == 1u);
}

BOOST_AUTO_TEST_CASE(the_clock_offset_moves_every_steady_time_of_the_record_each_time_it_is_set) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  const EngineReport engine{.request_id = 1, .arrival_time = 10, .first_scheduled_time = 11,
                            .first_token_time = 12, .last_token_time = 13};
  for (const double offset : {100.0, -5.0}) {
    recorder->set_steady_clock_offset(offset);
    RequestRecorder::Request request = recorder->arrive("/v1/completions", chat_headers);
    recorder->accept(request, chat_text, chat_body);
    const double arrived = request_line(handed->lines.back()).server_arrival_time;
    recorder->finish(request, Outcome::completed, engine);
    const auto& timing = *handed->records.back().phases.server->timing_metrics;
    BOOST_TEST(*timing.arrival_time == 10 + offset);
    BOOST_TEST(*timing.first_scheduled_time == 11 + offset);
    BOOST_TEST(*timing.first_token_time == 12 + offset);
    BOOST_TEST(*timing.last_token_time == 13 + offset);
    BOOST_TEST(*timing.server_arrival_time == arrived + offset);
  }
}

BOOST_AUTO_TEST_CASE(a_recorder_without_an_output_directory_records_nothing) {
  RequestRecorder recorder({});
  BOOST_TEST(recorder.start());
  streamed_request(recorder, 1);
  recorder.close();

  BOOST_TEST(!recorder.recording());
  BOOST_TEST(recorder.destination() == nullptr);
  BOOST_TEST(recorder.accounting_line() == "recording off");
}

BOOST_AUTO_TEST_CASE(what_a_destination_refuses_or_throws_at_is_counted_and_never_reaches_the_handler) {
  for (const Keeping::Refuse refuse : {Keeping::Refuse::by_saying_so, Keeping::Refuse::by_throwing}) {
    auto handed = std::make_shared<Handed>();
    auto recorder = keeping_recorder(handed, {}, refuse);
    BOOST_CHECK_NO_THROW(streamed_request(*recorder, 1));

    BOOST_TEST(recorder->refused() == 3u);  // the request line, the response line, the record
    BOOST_TEST(recorder->accounting_line() == "kept; refused by the destination: 3");
  }
}

BOOST_AUTO_TEST_CASE(requests_recorded_from_several_threads_are_each_recorded_once) {
  constexpr int threads = 4;
  constexpr int requests = 200;
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  std::barrier start(threads);
  std::vector<std::jthread> handlers;
  for (int t = 0; t < threads; ++t) {
    handlers.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < requests; ++i) streamed_request(*recorder, t * requests + i);
    });
  }
  handlers.clear();

  BOOST_TEST(handed->lines.size() == std::size_t(2 * threads * requests));
  std::set<std::int64_t> ids;
  for (const auto& record : handed->records) ids.insert(std::get<std::int64_t>(record.request_id));
  BOOST_TEST(ids.size() == std::size_t(threads * requests));
  std::set<std::string> trace_ids;
  for (const TraceLine& line : handed->lines) {
    if (const auto* request = std::get_if<RequestLine>(&line)) trace_ids.insert(request->trace_id);
  }
  BOOST_TEST(trace_ids.size() == std::size_t(threads * requests));
}

BOOST_AUTO_TEST_SUITE_END()
