// The performance-metrics configuration three ways: raw JSON records as the reference
// server submits them, typed records (no DOM built), and raw records in an arena of their
// own. Each writes the reference's bytes under DIR (default "perf_metrics_out"); exit 0
// when every record of each was written.
#include <boost/json.hpp>

#include <filesystem>
#include <iostream>
#include <string>

import jsonl.writer;
import jsonl.perf_metrics;

namespace {

bool raw(const std::filesystem::path& dir) {
  // docs:begin raw
  jsonl::PerfMetricsJsonlWriter writer(dir, "server");  // perf_metrics-server-<host>-<pid>-<time>.jsonl
  writer.start();
  writer.submit(boost::json::object{
      {"request_id", "1042"},
      {"phases", boost::json::object{{"server", boost::json::object{{"first_iter", 10}, {"last_iter", 42}}}}}});
  writer.close();
  // docs:end raw
  return writer.stats().written == 1;
}

bool typed(const std::filesystem::path& dir) {
  // docs:begin typed
  // Typed: structs following the published schema; no DOM is built on the way.
  jsonl::TypedPerfMetricsJsonlWriter writer(dir, "server");
  writer.start();
  writer.submit(jsonl::perf::PerfMetricsRecord{
      .request_id = std::string("1042"),
      .phases = {.server = jsonl::perf::PhaseMetrics{
                     .first_iter = 10, .last_iter = 42,
                     .timing_metrics = jsonl::perf::TimingMetrics{.arrival_time = 12.5, .first_token_time = 12.61}}}});
  // docs:end typed
  writer.close();
  return writer.stats().written == 1;
}

bool arena(const std::filesystem::path& dir) {
  const std::string line = R"({"request_id":"1042","phases":{"server":{"first_iter":10,"last_iter":42}}})";
  // docs:begin arena
  // A raw JSON record in an arena of its own: built in a few blocks, freed in one go.
  jsonl::ArenaPerfMetricsJsonlWriter json_writer(dir, "server");
  json_writer.start();
  jsonl::ArenaRecord record = jsonl::ArenaRecord::make();
  record.value() = boost::json::parse(line, record.storage());  // or jsonl::ArenaRecord::parse(line, error)
  json_writer.submit(std::move(record));
  // docs:end arena
  json_writer.close();
  return json_writer.stats().written == 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path root = argc > 1 ? argv[1] : "perf_metrics_out";
  const bool ok = raw(root / "raw") && typed(root / "typed") && arena(root / "arena");
  std::cout << (ok ? "perf_metrics: every record written\n" : "perf_metrics: FAILED\n");
  return ok ? 0 : 1;
}
