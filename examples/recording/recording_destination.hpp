// Where a RequestRecorder's records go: this project's two writers by default, or any
// other destination (the serve benchmark puts spdlog's async logger here, to compare).
// It imports jsonl.perf_metrics: include it after every other header.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "request_recorder.hpp"
#include "trace_lines.hpp"

import jsonl.perf_metrics;

namespace jsonl_recording {

// Lifecycle: start() once before the first record, close() once after the last (the
// recorder calls both). trace() and perf() may be called from any thread between them,
// and must not block on a file: each hands its record on and says whether it was taken.
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
  virtual bool perf(jsonl::perf::PerfMetricsRecord record) = 0;
  // Its jsonl writers' counters, each labelled server_kind, for a metrics exposition
  // (none for a destination that has no jsonl writers). From any thread; never blocks
  // a writer.
  virtual std::vector<jsonl::WriterMetrics> writer_metrics() const = 0;
  // What it wrote and lost, in a line.
  virtual std::string accounting_line() const = 0;
};

// This project's writers: typed perf metrics into DIR/perf_metrics/, request traces into
// DIR/request_trace/<hour>/, as `options` says.
std::unique_ptr<RecordingDestination> jsonl_writers(const RecorderOptions& options);

}  // namespace jsonl_recording
