#include "run_report.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include "svg_charts.hpp"

namespace jsonl_perf::report {
namespace {

using charts::escape;

std::string cell(const std::optional<double>& value) { return value ? charts::number(*value) : "—"; }

std::string share(const std::optional<double>& value) {
  if (!value) return "—";
  std::ostringstream text;
  text.setf(std::ios::fixed);
  text.precision(1);
  text << *value * 100 << '%';
  return text.str();
}

// A table of `header` and `rows`, each cell already HTML, named by its data-block; row i
// carries row_classes[i] where given (a phase's depth, which indents its first cell).
std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                  const std::string& name, const std::vector<std::string>& row_classes = {}) {
  std::ostringstream html;
  html << "<table data-block=\"" << name << "\"><thead><tr>";
  for (const std::string& title : header) html << "<th>" << escape(title) << "</th>";
  html << "</tr></thead><tbody>\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    html << "<tr" << (i < row_classes.size() && !row_classes[i].empty() ? " class=\"" + row_classes[i] + "\"" : "") << '>';
    for (const std::string& value : rows[i]) html << "<td>" << value << "</td>";
    html << "</tr>\n";
  }
  html << "</tbody></table>\n";
  return html.str();
}

std::string headline_section(const RunReportInput& input) {
  std::vector<std::vector<std::string>> rows;
  for (const Headline& row : headlines(input.requests, input.instances)) {
    const Spread& s = row.spread;
    rows.push_back({escape(row.block), escape(row.label) + (row.per_minute ? " <small>(by minute)</small>" : ""),
                    escape(row.unit), "<b>" + cell(s.mean) + "</b>", "<b>" + cell(s.p10) + "</b>", cell(s.p25),
                    "<b>" + cell(s.p50) + "</b>", cell(s.p75), "<b>" + cell(s.p90) + "</b>", cell(s.p99),
                    std::to_string(s.n)});
  }
  const std::size_t minutes = whole_minutes(input.requests).size();
  std::ostringstream html;
  html << "<h2>0 · Metrics</h2>\n<p class=\"sub\">Completed requests only. A row by minute runs over the run's whole "
          "minutes of finish ("
       << minutes
       << " here; the first and last partial minutes are dropped), its mean the whole window's value: Σ over every "
          "completed request over Σ E2E, or over the window (first start to last finish) and the "
       << charts::number(input.instances)
       << " engine instance(s) that stand in for the reference's GPUs. n counts requests, or minutes.</p>\n"
       << table({"block", "metric", "unit", "mean", "p10", "p25", "p50", "p75", "p90", "p99", "n"}, rows, "metrics");
  return html.str();
}

std::string over_time_section(const RunReportInput& input) {
  const std::vector<Occupancy> samples = occupancy(input.requests);
  const auto series = [&](std::string name, std::size_t Occupancy::*member) {
    charts::Series line{std::move(name), {}};
    for (const Occupancy& sample : samples) line.points.emplace_back(sample.at, static_cast<double>(sample.*member));
    return line;
  };
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, member] :
       std::vector<std::pair<std::string, std::size_t Occupancy::*>>{{"conversations in the instance", &Occupancy::conversations},
                                                                     {"requests in flight", &Occupancy::in_flight},
                                                                     {"requests in prefill", &Occupancy::in_prefill},
                                                                     {"requests in decode", &Occupancy::in_decode}}) {
    std::vector<double> values;
    for (const Occupancy& sample : samples) values.push_back(static_cast<double>(sample.*member));
    const Spread s = spread(values);
    rows.push_back({escape(name), cell(s.mean), cell(s.p50), cell(s.p90), cell(s.max)});
  }
  std::ostringstream html;
  html << "<h3>The instance over time</h3>\n<p class=\"sub\">Sampled once a second. A conversation runs from its "
          "session's first arrival to its last response's end; prefill from the first token less the prefill time to "
          "the first token; decode from the first token to the response's end. Rejected and unanswered requests are "
          "left out.</p>\n"
       << charts::line_chart("In the instance, once a second",
                             {series("conversations", &Occupancy::conversations), series("in flight", &Occupancy::in_flight),
                              series("in prefill", &Occupancy::in_prefill), series("in decode", &Occupancy::in_decode)},
                             "s since the first arrival", "requests")
       << table({"series", "mean", "p50", "p90", "max"}, rows, "occupancy");
  const std::vector<LatencyWindow> windows = latency_over_time(input.requests);
  const auto latency = [&](std::string name, Spread LatencyWindow::*spread_of, std::optional<double> Spread::*at) {
    charts::Series line{std::move(name), {}};
    for (const LatencyWindow& window : windows) {
      if (const std::optional<double> value = window.*spread_of.*at) line.points.emplace_back(window.at, *value);
    }
    return line;
  };
  html << "<h3>Latency over time</h3>\n<p class=\"sub\">Completed requests by the window their response ended in.</p>\n"
       << charts::line_chart("TTFT by window of finish",
                             {latency("p50", &LatencyWindow::ttft, &Spread::p50), latency("p99", &LatencyWindow::ttft, &Spread::p99)},
                             "s since the first arrival", "ms")
       << charts::line_chart("E2E by window of finish",
                             {latency("p50", &LatencyWindow::e2e, &Spread::p50), latency("p99", &LatencyWindow::e2e, &Spread::p99)},
                             "s since the first arrival", "ms");
  return html.str();
}

std::vector<std::string> spread_cells(const Spread& s) {
  return {std::to_string(s.n), cell(s.mean), cell(s.p50), cell(s.p90), cell(s.p99), cell(s.max)};
}

std::string phase_table(const std::vector<Phase>& rows, const std::string& name) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> classes;
  for (const Phase& row : rows) {
    std::vector<std::string> line = {escape(row.label)};
    for (std::string& value : spread_cells(row.spread)) line.push_back(std::move(value));
    line.push_back(share(row.share_of_e2e));
    cells.push_back(std::move(line));
    classes.push_back("depth" + std::to_string(row.depth));
  }
  return table({"phase (ms)", "n", "mean", "p50", "p90", "p99", "max", "share of E2E"}, cells, name, classes);
}

std::string requests_section(const RunReportInput& input) {
  std::ostringstream html;
  const std::size_t done = std::count_if(input.requests.begin(), input.requests.end(), completed);
  html << "<h2>1 · Requests</h2>\n<h3>Latency</h3>\n<p class=\"sub\">Completed requests only (" << done << " of "
       << input.requests.size()
       << "). Phases in the order they happen; an indented row lies inside the row above it. A phase's share of E2E is "
          "its sum over the requests that have it over their E2E's sum: TTFT and Decode share E2E between them.</p>\n"
       << phase_table(phases(input.requests), "phases");
  std::vector<std::vector<std::string>> token_rows;
  for (const TokenRow& row : tokens(input.requests)) {
    std::vector<std::string> line = {escape(row.label)};
    for (std::string& value : spread_cells(row.spread)) line.push_back(std::move(value));
    token_rows.push_back(std::move(line));
  }
  html << "<h3>Tokens</h3>\n<p class=\"sub\">From the usage block the client received.</p>\n"
       << table({"tokens", "n", "mean", "p50", "p90", "p99", "max"}, token_rows, "tokens");
  std::vector<std::vector<std::string>> route_rows;
  for (const Breakdown& row : by_route_and_kind(input.requests)) {
    route_rows.push_back({escape(row.route), escape(row.kind), std::to_string(row.requests), std::to_string(row.completed),
                          cell(row.ttft.p50), cell(row.ttft.p99), cell(row.e2e.p50), cell(row.e2e.p99), cell(row.osl.p50)});
  }
  html << "<h3>By route and kind</h3>\n"
       << table({"route", "kind", "requests", "completed", "TTFT p50 (ms)", "TTFT p99 (ms)", "E2E p50 (ms)",
                 "E2E p99 (ms)", "OSL p50"},
                route_rows, "routes");
  if (const std::vector<Phase> hop_rows = hops(input.requests); !hop_rows.empty()) {
    html << "<h3>By hop</h3>\n<p class=\"sub\">A disaggregated run's completed requests, each hop's part of "
            "E2E.</p>\n"
         << phase_table(hop_rows, "hops");
  }
  if (input.client_results) {
    const ClientView view = client_view(input.requests);
    std::vector<std::vector<std::string>> rows;
    for (const auto& [label, s] : {std::pair<std::string, const Spread&>{"client E2E, from send", view.client_e2e},
                                   {"server E2E, from the trace", view.server_e2e},
                                   {"client less server, per request", view.difference}}) {
      std::vector<std::string> line = {escape(label)};
      for (std::string& value : spread_cells(s)) line.push_back(std::move(value));
      rows.push_back(std::move(line));
    }
    html << "<h3>The client's view beside the server's</h3>\n<p class=\"sub\">Completed requests the load client's "
            "results matched (on the x-request-id each carried).</p>\n"
         << table({"E2E (ms)", "n", "mean", "p50", "p90", "p99", "max"}, rows, "client");
  }
  std::vector<std::vector<std::string>> cause_rows;
  for (const Cause& cause : refusals_and_errors(input.requests, input.client_failures)) {
    cause_rows.push_back({escape(cause.seen_by), escape(cause.cause), std::to_string(cause.requests)});
  }
  html << "<h3>Refusals and errors by cause</h3>\n"
       << (cause_rows.empty() ? std::string("<p data-block=\"causes\">") +
                                    (input.requests.empty() ? "No request." : "Every request completed.") + "</p>\n"
                              : table({"seen by", "cause", "requests"}, cause_rows, "causes"));
  return html.str();
}

std::string histograms(const RunReportInput& input) {
  std::ostringstream html;
  for (const auto& [title, member] : {std::pair{"TTFT", &Request::ttft_ms}, std::pair{"E2E", &Request::e2e_ms}}) {
    std::vector<double> values;
    for (const Request& request : input.requests) {
      if (completed(request) && request.*member) values.push_back(*(request.*member));
    }
    if (values.empty()) continue;
    std::sort(values.begin(), values.end());
    const Spread s = spread(values);
    html << charts::histogram(std::string(title) + " of completed requests", values,
                              charts::Axis(values.front(), values.back()), "ms",
                              {{"p50", *s.p50}, {"p90", *s.p90}, {"p99", *s.p99}});
  }
  return html.str();
}

}  // namespace

std::string run_report_html(const RunReportInput& input) {
  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Run report: "
       << escape(input.title)
       << "</title>\n<style>body{font-family:sans-serif;margin:2em}"
          "figure{display:inline-block;margin:1em}figcaption{font-weight:bold}"
          "table{border-collapse:collapse;margin:0.5em 1em;font-size:0.9em}th,td{padding:0.2em 0.6em;text-align:right;white-space:nowrap}"
          "th:first-child,td:first-child,th:nth-child(2),td:nth-child(2){text-align:left}"
          "tr:nth-child(even){background:#f2f4f7}th{border-bottom:1px solid #888}b{color:#c0392b;font-weight:normal}"
          "tr.depth1 td:first-child{padding-left:2em}tr.depth2 td:first-child{padding-left:4em}"
          ".sub{color:#555;max-width:60em}</style>\n</head>\n<body>\n<h1>Run report</h1>\n<p>"
       << escape(input.title) << ": " << input.requests.size() << " requests.</p>\n"
       << headline_section(input) << over_time_section(input) << requests_section(input) << histograms(input)
       << "</body>\n</html>\n";
  return page.str();
}

}  // namespace jsonl_perf::report
