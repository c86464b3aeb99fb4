// Where a RequestRecorder's records go: this project's two writers by default, or any
// other destination a caller writes (jsonl-perf puts spdlog's async logger here, to
// compare).
module;

#include <memory>
#include <string>
#include <vector>

export module jsonl.recording:destination;

import jsonl.perf_metrics;
import :reports;
import :trace_lines;

export namespace jsonl::recording {

// Lifecycle: start() once before the first record, close() once after the last (the
// recorder calls both). trace() and perf() may be called from any thread between them,
// and must not block on a file: each hands its record on and says whether it was taken
// (a record not taken, or an exception, the recorder counts as refused).
class RecordingDestination {
 public:
  virtual ~RecordingDestination() = default;
  // False when it cannot record (it said why, on its log).
  virtual bool start() = 0;
  // Writes what is queued.
  virtual void close() = 0;
  // A request or a response trace line.
  virtual bool trace(TraceLine line) = 0;
  // A completed request's perf-metrics record.
  virtual bool perf(perf::PerfMetricsRecord record) = 0;
  // Its jsonl writers' counters, each labelled server_kind, for a metrics exposition
  // (none for a destination that has no jsonl writers). From any thread; never blocks
  // a writer.
  virtual std::vector<WriterMetrics> writer_metrics() const = 0;
  // What it wrote and lost, in a line.
  virtual std::string accounting_line() const = 0;
};

// This project's writers: typed perf metrics into DIR/perf_metrics/, request traces into
// DIR/request_trace/<hour>/, as `options` says (options.output_dir must be set).
std::unique_ptr<RecordingDestination> jsonl_writers(const RecorderOptions& options);

}  // namespace jsonl::recording
