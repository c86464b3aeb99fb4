// What `jsonl-perf summary` reads from performance-metrics files: per server kind and
// status, the latency samples of each metric (milliseconds) and the KV-cache totals.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "bounded_lines.hpp"

namespace jsonl_perf {

// Metric names, in report order.
//   queue_ms        first_scheduled_time - arrival_time (worker; the ctx phase of a
//                   disaggregated record)
//   ttft_ms         first_token_time - arrival_time (same phase)
//   e2e_ms          last_token_time - arrival_time (worker; the gen phase)
//   frontend_ttft_ms    disagg_server_first_token_time - disagg_server_arrival_time
//   ctx_dispatch_ms     disagg_ctx_dispatch_time - disagg_server_arrival_time
inline const std::vector<std::string> metric_names{"queue_ms", "ttft_ms", "e2e_ms", "frontend_ttft_ms",
                                                   "ctx_dispatch_ms"};

struct Group {
  std::string kind;
  std::string status;
  std::uint64_t records = 0;
  std::map<std::string, std::vector<double>> samples;  // sorted after loading
  double reused_blocks = 0;
  double allocated_blocks = 0;  // KV-cache reuse ratio: reused / allocated
};

struct Dataset {
  std::vector<Group> groups;          // by kind, then status
  std::vector<double> arrival_times;  // seconds, every record's, for records over time
  std::uint64_t files = 0;
  std::uint64_t lines = 0;
  std::uint64_t bad_lines = 0;
  std::uint64_t torn_lines = 0;
};

// Reads every file (directories: their perf_metrics-*.jsonl) a chunk at a time, line by
// line, in pieces of up to 32 MiB shared out to `threads` threads (0: one a core).
// Memory is the samples kept, a few doubles a record, not the bytes read: each thread
// holds a chunk, one line of at most `max_line_bytes` and, for a compressed file, a zstd
// decoder, whose window zstd itself holds to 128 MiB whatever a frame declares. The
// result is the one a sequential read gives. Bad lines are reported on `err` with file
// and line, and skipped: a line that is not a JSON object, a line longer than
// `max_line_bytes` (dropped as it streams past), a last line without its newline (torn),
// a compressed file cut short (one torn tail: the line left open and the frame's bytes
// after its last whole block, whatever the writer's block layout), and compressed bytes
// that do not decode (the rest of their piece). Throws
// std::runtime_error for a path that cannot be read.
Dataset load_dataset(const std::vector<std::filesystem::path>& paths, std::ostream& err, unsigned threads = 0,
                     std::uint64_t max_line_bytes = default_max_line_bytes);

// The nearest-rank percentile of sorted, non-empty `values`: the smallest value with at
// least p% of the values at or below it.
double percentile(const std::vector<double>& values, double p);

// One self-contained HTML page: a latency histogram per group and metric, and records
// over time, each an inline SVG. No scripts, no external resources.
std::string html_report(const Dataset& dataset);

}  // namespace jsonl_perf
