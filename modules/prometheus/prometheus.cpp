module;

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

module jsonl.prometheus;

namespace jsonl {

WritersCollectable::WritersCollectable(Source writers) : writers_(std::move(writers)) {}

std::vector<::prometheus::MetricFamily> WritersCollectable::Collect() const {
  std::vector<WriterMetrics> writers = writers_();
  std::erase_if(writers, [](const WriterMetrics& writer) {
    try {
      exposed_families(std::span(&writer, 1));
      return false;
    } catch (const std::invalid_argument&) {
      return true;
    }
  });
  std::vector<::prometheus::MetricFamily> collected;
  for (const ExposedFamily& family : exposed_families(writers)) {
    const bool counter = family.type == "counter";
    ::prometheus::MetricFamily& out = collected.emplace_back();
    out.name = std::string(family.name);
    out.help = std::string(family.help);
    out.type = counter ? ::prometheus::MetricType::Counter : ::prometheus::MetricType::Gauge;
    for (const ExposedSample& sample : family.samples) {
      ::prometheus::ClientMetric& metric = out.metric.emplace_back();
      for (const MetricLabel& label : sample.labels) metric.label.push_back({label.name, label.value});
      const double value = std::visit([](auto number) { return static_cast<double>(number); }, sample.value);
      (counter ? metric.counter.value : metric.gauge.value) = value;
    }
  }
  return collected;
}

}  // namespace jsonl
