module;

// The writers' templates are instantiated here: GCC checks the drain's time_point
// comparisons against the declarations this unit includes, not the writer module's.
#include <chrono>
#include <compare>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

module jsonl.recording;

namespace jsonl::recording {
namespace {

class JsonlWriters final : public RecordingDestination {
 public:
  explicit JsonlWriters(const RecorderOptions& options)
      : perf_(perf_options(options)), server_kind_(options.server_kind) {
    if (options.traces) traces_.emplace(trace_options(options), process_suffix());
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
    return traces_->submit(trace_record(std::move(line)));
  }

  bool perf(perf::PerfMetricsRecord record) override { return perf_.submit(std::move(record)); }

  std::vector<WriterMetrics> writer_metrics() const override {
    const std::vector<MetricLabel> labels{{"server_kind", server_kind_}};
    std::vector<WriterMetrics> writers{{perf_.stats(), std::string(perf_metrics_subject), labels}};
    if (traces_) writers.push_back({traces_->stats(), std::string(request_trace_subject), labels});
    return writers;
  }

  std::string accounting_line() const override {
    std::ostringstream line;
    const auto describe = [&](std::string_view name, const WriterStats& stats) {
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
  static WriterOptions perf_options(const RecorderOptions& options) {
    WriterOptions result = adjusted(perf_metrics_options(*options.output_dir / "perf_metrics", options.server_kind),
                                    options, options.durable_perf_metrics);
    result.max_file_bytes = options.perf_metrics_rotation.max_file_bytes;
    result.max_file_age = options.perf_metrics_rotation.max_file_age;
    result.max_files = options.perf_metrics_rotation.max_files;
    return result;
  }

  static WriterOptions trace_options(const RecorderOptions& options) {
    WriterOptions result =
        adjusted(request_trace_options(*options.output_dir / "request_trace"), options, options.durable_traces);
    result.max_routed_file_idle = options.request_trace_retention;
    return result;
  }

  // A configuration's options as the recorder's options adjust both writers'.
  static WriterOptions adjusted(WriterOptions result, const RecorderOptions& options, bool durable) {
    result.durability.enabled = durable;
    result.linger = options.linger;
    result.hold_for = options.hold_for;
    result.on_thread_start = options.on_writer_thread_start;
    result.rotation_requests = options.rotation_requests;
    result.clock = options.writer_clock;
    if (options.zstd_level) result.compression = Compression::zstd(*options.zstd_level);
    return result;
  }

  TypedPerfMetricsJsonlWriter perf_;
  std::optional<RequestTraceWriter<TraceLine>> traces_;  // none: the proxy traces
  std::string server_kind_;
};

}  // namespace

std::unique_ptr<RecordingDestination> jsonl_writers(const RecorderOptions& options) {
  return std::make_unique<JsonlWriters>(options);
}

}  // namespace jsonl::recording
