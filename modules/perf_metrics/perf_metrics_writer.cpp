module;

#include <boost/json/value.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

module jsonl.perf_metrics;

namespace jsonl {

WriterOptions perf_metrics_options(std::optional<std::filesystem::path> output_dir,
                                   std::string_view server_kind, LogSink log_sink) {
  return {.output_dir = std::move(output_dir),
          .file_stem = "perf_metrics-" + std::string(server_kind),
          .subject = std::string(perf_metrics_subject),
          .queue_size = perf_metrics_queue_size,
          .batch_size = perf_metrics_batch_size,
          .shutdown_timeout = perf_metrics_shutdown_timeout,
          .log_sink = std::move(log_sink)};
}

bool PerfMetricsFormat::append_line(boost::json::value& record, std::string& out) const {
  const bool sanitized = append_shaped_json(record, out);
  out += '\n';
  return sanitized;
}

}  // namespace jsonl
