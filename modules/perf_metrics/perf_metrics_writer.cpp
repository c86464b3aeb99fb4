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

PerfMetricsJsonlWriter::PerfMetricsJsonlWriter(std::optional<std::filesystem::path> output_dir,
                                               std::string_view server_kind, LogSink log_sink)
    : PerfMetricsJsonlWriter(perf_metrics_options(std::move(output_dir), server_kind, std::move(log_sink))) {}

PerfMetricsJsonlWriter::PerfMetricsJsonlWriter(WriterOptions options)
    : JsonlRecordWriter(std::move(options), std::make_shared<PerfMetricsFormat>()) {}

ArenaPerfMetricsJsonlWriter::ArenaPerfMetricsJsonlWriter(std::optional<std::filesystem::path> output_dir,
                                                         std::string_view server_kind, LogSink log_sink)
    : ArenaPerfMetricsJsonlWriter(perf_metrics_options(std::move(output_dir), server_kind, std::move(log_sink))) {}

ArenaPerfMetricsJsonlWriter::ArenaPerfMetricsJsonlWriter(WriterOptions options)
    : JsonlRecordWriter(std::move(options), std::make_shared<ArenaRecordFormat<PerfMetricsFormat>>()) {}

TypedPerfMetricsJsonlWriter::TypedPerfMetricsJsonlWriter(std::optional<std::filesystem::path> output_dir,
                                                         std::string_view server_kind, LogSink log_sink)
    : TypedPerfMetricsJsonlWriter(perf_metrics_options(std::move(output_dir), server_kind, std::move(log_sink))) {}

TypedPerfMetricsJsonlWriter::TypedPerfMetricsJsonlWriter(WriterOptions options)
    : JsonlRecordWriter(std::move(options), std::make_shared<PerfMetricsTypedFormat>()) {}

}  // namespace jsonl
