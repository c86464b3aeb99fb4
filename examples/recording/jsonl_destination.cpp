// Headers before the modules: no #include may follow an import.
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <optional>
#include <sstream>
#include <system_error>
#include <vector>

#include "recording_destination.hpp"

import jsonl.request_trace;

namespace jsonl_recording {

// A trace line's text, written on the writer's thread.
class TraceLineFormat final : public jsonl::RecordFormat<TraceLine> {
 public:
  explicit TraceLineFormat(jsonl::JsonTextOptions) {}

  bool append_line(TraceLine& line, std::string& out) const override {
    const bool sanitized = append_trace_line(line, out);
    out += '\n';
    return sanitized;
  }
};

}  // namespace jsonl_recording

// The request-trace writer's payload format for the typed lines (TraceFormat composes it).
template <>
struct jsonl::format_for<jsonl_recording::TraceLine, jsonl::JsonLineFormat> {
  using type = jsonl_recording::TraceLineFormat;
};

namespace jsonl_recording {
namespace {

class JsonlWriters final : public RecordingDestination {
 public:
  explicit JsonlWriters(const RecorderOptions& options)
      : perf_(perf_options(options)), server_kind_(options.server_kind) {
    if (options.traces) traces_.emplace(trace_options(options), jsonl::process_suffix());
  }

  bool start() override {
    perf_.start();
    if (traces_) traces_->start();
    return perf_.path().has_value() && (!traces_ || traces_->path().has_value());
  }

  void close() override {
    perf_.close();
    if (traces_) traces_->close();
  }

  bool trace(TraceLine line) override {
    if (!traces_) return false;
    const std::string_view kind = trace_kind(line);
    const auto made = made_at(line);
    return traces_->submit(jsonl::TraceRecord<TraceLine>(std::string(kind), std::move(line), made));
  }

  bool perf(jsonl::perf::PerfMetricsRecord record) override { return perf_.submit(std::move(record)); }

  std::vector<jsonl::WriterMetrics> writer_metrics() const override {
    const std::vector<jsonl::MetricLabel> labels{{"server_kind", server_kind_}};
    std::vector<jsonl::WriterMetrics> writers{{perf_.stats(), std::string(jsonl::perf_metrics_subject), labels}};
    if (traces_) writers.push_back({traces_->stats(), std::string(jsonl::request_trace_subject), labels});
    return writers;
  }

  std::string accounting_line() const override {
    std::ostringstream line;
    const auto describe = [&](std::string_view name, const jsonl::WriterStats& stats) {
      line << name << ": submitted " << stats.submitted << ", written " << stats.written << ", unknown "
           << stats.unknown << ", dropped " << stats.dropped();
    };
    describe("perf metrics", perf_.stats());
    if (traces_) {
      line << "; ";
      describe("request traces", traces_->stats());
    }
    return line.str();
  }

 private:
  // Names the calling thread "jsonl-writer" (what top, perf and /proc show) and lowers
  // its scheduling priority to `nice` (Linux: a thread's own nice value, set through
  // its id).
  static std::function<void()> writer_thread_start(int nice) {
    return [nice] {
      ::pthread_setname_np(::pthread_self(), "jsonl-writer");
      if (nice != 0 && ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice) != 0) {
        throw std::system_error(errno, std::generic_category(), "setpriority to nice " + std::to_string(nice));
      }
    };
  }

  static jsonl::WriterOptions perf_options(const RecorderOptions& options) {
    jsonl::WriterOptions result = jsonl::perf_metrics_options(*options.output_dir / "perf_metrics", options.server_kind);
    result.durability.enabled = options.durable_perf_metrics;
    result.linger = options.linger;
    result.hold_for = options.hold_for;
    result.on_thread_start = writer_thread_start(options.writer_nice);
    if (options.zstd_level) result.compression = jsonl::Compression::zstd(*options.zstd_level);
    return result;
  }

  static jsonl::WriterOptions trace_options(const RecorderOptions& options) {
    jsonl::WriterOptions result = jsonl::request_trace_options(*options.output_dir / "request_trace");
    result.durability.enabled = options.durable_traces;
    result.linger = options.linger;
    result.hold_for = options.hold_for;
    result.on_thread_start = writer_thread_start(options.writer_nice);
    if (options.zstd_level) result.compression = jsonl::Compression::zstd(*options.zstd_level);
    return result;
  }

  jsonl::TypedPerfMetricsJsonlWriter perf_;
  std::optional<jsonl::RequestTraceWriter<TraceLine>> traces_;  // none: the proxy traces
  std::string server_kind_;
};

}  // namespace

std::unique_ptr<RecordingDestination> jsonl_writers(const RecorderOptions& options) {
  return std::make_unique<JsonlWriters>(options);
}

}  // namespace jsonl_recording
