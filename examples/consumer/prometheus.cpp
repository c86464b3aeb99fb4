// Exposes writers' counters through an installed jsonl.prometheus, and through
// prometheus_text, for the same writers: tests/prometheus/same_families.py reads both
// with prometheus_client and compares them (in the build, and against an install).
// A server would register the collectable with its prometheus::Exposer
// (RegisterCollectable), or collect it beside its registry for its own /metrics handler.
//
//   consumer_prometheus SCRATCH TEXT_OUT COLLECTED_OUT
#include <boost/json.hpp>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

import jsonl.writer;
import jsonl.perf_metrics;
import jsonl.prometheus;

namespace {

// Every counter, drop reason and the timestamp non-zero, each a value of its own.
jsonl::WriterStats every_counter_counted() {
  jsonl::WriterStats stats;
  std::uint64_t value = 1;
  for (const jsonl::CounterInfo& counter : jsonl::counters) stats[counter.counter] = value++;
  for (std::uint64_t& dropped : stats.dropped_by) dropped = value++;
  stats.last_append = std::chrono::system_clock::time_point(std::chrono::microseconds(1'790'000'000'123'456));
  return stats;
}

bool write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out.flush());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: consumer_prometheus SCRATCH TEXT_OUT COLLECTED_OUT\n";
    return 2;
  }
  jsonl::PerfMetricsJsonlWriter writer(argv[1], "server");
  writer.start();
  for (int id = 1; id <= 3; ++id) {
    writer.submit(boost::json::object{{"request_id", std::to_string(id)},
                                      {"phases", boost::json::object{{"server", boost::json::object{{"first_iter", id}}}}}});
  }
  writer.submit(boost::json::object{{"request_id", "4"}});  // malformed: dropped
  writer.close();

  const std::vector<jsonl::MetricLabel> labels{{"server_kind", "ctx \"0\" \\ a\nb"}, {"host", "h1"}};
  const auto writers = [&] {
    return std::vector<jsonl::WriterMetrics>{{writer.stats(), std::string(jsonl::perf_metrics_subject), labels},
                                             {every_counter_counted(), "every counter", {{"host", "h2"}}},
                                             {jsonl::WriterStats{}, "idle", {}}};
  };
  const jsonl::WritersCollectable collectable(writers);
  const bool written = write(argv[2], jsonl::prometheus_text(writers())) &&
                       write(argv[3], prometheus::TextSerializer().Serialize(collectable.Collect()));
  return written ? 0 : 1;
}
