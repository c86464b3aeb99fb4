// A writer's counters in a prometheus-cpp registry's exposition: the collectable asks
// for the writers at each scrape, on the scraping thread. Writes under DIR (default
// "prometheus_out"); exit 0 when the scrape holds the writer's count.
#include <boost/json.hpp>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

import jsonl.writer;
import jsonl.perf_metrics;
import jsonl.prometheus;

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : "prometheus_out";
  jsonl::PerfMetricsJsonlWriter writer(dir, "server");
  writer.start();
  writer.submit(boost::json::object{{"request_id", "1"},
                                    {"phases", boost::json::object{{"server", boost::json::object{{"first_iter", 1}}}}}});
  writer.close();
  auto registry = std::make_shared<prometheus::Registry>();  // the server's own metrics

  // docs:begin collectable
  auto writers = std::make_shared<jsonl::WritersCollectable>(
      [&] { return std::vector<jsonl::WriterMetrics>{{writer.stats(), "performance metrics", {}}}; });
  // With an Exposer: exposer.RegisterCollectable(writers). Or beside a registry, for a
  // /metrics handler of one's own:
  std::vector<prometheus::MetricFamily> families = registry->Collect();
  for (prometheus::MetricFamily& family : writers->Collect()) families.push_back(std::move(family));
  const std::string exposition = prometheus::TextSerializer().Serialize(families);
  // docs:end collectable

  const bool ok =
      exposition.find("jsonl_records_written_total{subject=\"performance metrics\"} 1") != std::string::npos;
  std::cout << (ok ? "prometheus: the scrape holds the writer's counts\n" : "prometheus: FAILED\n");
  return ok ? 0 : 1;
}
