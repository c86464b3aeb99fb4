// The client's report: a latency table per route and kind, and the same as JSON; and
// run_client, which drives a run and reports it.
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "client.hpp"

namespace jsonl_perf::serve {
namespace {

namespace json = boost::json;

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * values.size()));
  return values[std::max<std::size_t>(rank, 1) - 1];
}

struct Group {
  std::map<std::string, std::size_t> outcomes;
  std::vector<double> ttft;
  std::vector<double> e2e;
  std::size_t usage = 0;
  std::size_t count = 0;
};

std::map<std::string, Group> groups_of(const ClientReport& report) {
  std::map<std::string, Group> groups;
  for (const RequestResult& result : report.requests) {
    Group& group = groups[std::string(route_path(result.route)) +
                          (result.stream ? " stream" : " json")];
    ++group.count;
    ++group.outcomes[result.outcome];
    if (result.ttft_ms) group.ttft.push_back(*result.ttft_ms);
    if (result.e2e_ms) group.e2e.push_back(*result.e2e_ms);
    group.usage += result.usage_found;
  }
  return groups;
}

}  // namespace

void print_client_report(const ClientReport& report, std::ostream& out) {
  out << "client: " << report.requests.size() << " requests in " << std::fixed << std::setprecision(1)
      << report.seconds << " s; latency from each request's intended send time\n";
  out << "  " << std::left << std::setw(28) << "route" << std::right << std::setw(7) << "sent" << std::setw(7) << "ok"
      << std::setw(7) << "usage" << std::setw(10) << "ttft p50" << std::setw(10) << "ttft p99" << std::setw(10)
      << "e2e p50" << std::setw(10) << "e2e p99" << std::setw(10) << "e2e max" << "  other outcomes\n";
  for (const auto& [name, group] : groups_of(report)) {
    const auto ok = group.outcomes.contains("ok") ? group.outcomes.at("ok") : 0;
    out << "  " << std::left << std::setw(28) << name << std::right << std::setw(7) << group.count << std::setw(7) << ok
        << std::setw(7) << group.usage << std::setprecision(2);
    for (double value : {percentile(group.ttft, 50), percentile(group.ttft, 99), percentile(group.e2e, 50),
                         percentile(group.e2e, 99), percentile(group.e2e, 100)}) {
      if (std::isnan(value)) {
        out << std::setw(10) << "-";  // no TTFT for an answer sent whole
      } else {
        out << std::setw(10) << value;
      }
    }
    out << " ";
    for (const auto& [outcome, count] : group.outcomes) {
      if (outcome != "ok") out << ' ' << outcome << '=' << count;
    }
    out << '\n';
  }
  out << "  (ms)\n";
}

std::string client_report_json(const ClientReport& report) {
  json::array requests;
  for (const RequestResult& result : report.requests) {
    const auto optional = [](const std::optional<double>& value) { return value ? json::value(*value) : json::value(nullptr); };
    requests.push_back(json::object{{"index", result.index},
                                    {"request_id", result.request_id},
                                    {"route", route_path(result.route)},
                                    {"stream", result.stream},
                                    {"scheduled_ms", result.scheduled_ms},
                                    {"sent_ms", result.sent_ms},
                                    {"ttft_ms", optional(result.ttft_ms)},
                                    {"e2e_ms", optional(result.e2e_ms)},
                                    {"e2e_from_send_ms", optional(result.e2e_from_send_ms)},
                                    {"http_status", result.http_status},
                                    {"outcome", result.outcome},
                                    {"usage_found", result.usage_found}});
  }
  json::object groups;
  for (const auto& [name, group] : groups_of(report)) {
    json::object outcomes;
    for (const auto& [outcome, count] : group.outcomes) outcomes[outcome] = count;
    groups[name] = {{"count", group.count},
                    {"outcomes", std::move(outcomes)},
                    {"usage_found", group.usage},
                    {"ttft_ms", {{"p50", percentile(group.ttft, 50)}, {"p99", percentile(group.ttft, 99)}}},
                    {"e2e_ms",
                     {{"p50", percentile(group.e2e, 50)}, {"p99", percentile(group.e2e, 99)}, {"max", percentile(group.e2e, 100)}}}};
  }
  return json::serialize(json::object{{"seconds", report.seconds}, {"groups", std::move(groups)}, {"requests", std::move(requests)}});
}

int run_client(const ClientOptions& options, std::ostream& out, std::ostream& err) {
  ClientReport report;
  try {
    report = drive(options);
  } catch (const std::exception& error) {
    err << "jsonl-perf client: " << error.what() << '\n';
    return 1;
  }
  print_client_report(report, out);
  if (options.json_output) {
    std::ofstream file(*options.json_output, std::ios::binary);
    file << client_report_json(report) << '\n';
    if (!file) {
      err << "jsonl-perf client: cannot write " << options.json_output->string() << '\n';
      return 1;
    }
  }
  const bool all_ok = std::all_of(report.requests.begin(), report.requests.end(),
                                  [](const RequestResult& result) { return result.outcome == "ok"; });
  return all_ok ? 0 : 1;
}

}  // namespace jsonl_perf::serve
