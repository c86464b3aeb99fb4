// `jsonl-perf join`: one row per request of a run's attempt directory, joining its
// request line, its response line (on trace_id) and the perf record of the engine that
// answered it (the response's client_id is the record's request_id), as a server that
// records both streams leaves them. A disaggregated deployment's response joins three
// records on its disagg_request_id: the proxy's, the context worker's and the generation
// worker's (the one with a KV-cache transfer), as the reference's analysis reads them.
// With the load client's results, each request's trace E2E beside the E2E its client
// measured (matched on the x-request-id header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "bounded_lines.hpp"

namespace jsonl_perf {

struct JoinOptions {
  std::filesystem::path attempt_dir;  // holds request_trace/ and perf_metrics/
  std::optional<std::filesystem::path> client_results;  // `jsonl-perf client --json-output`
  // Where to write requests.csv, the table of one row per request (requests_table.hpp).
  std::optional<std::filesystem::path> csv;
  // Where to write the run's report, a page read from the same rows (report/run_report.hpp).
  std::optional<std::filesystem::path> html;
  double instances = 1;  // the engine instances that served the run, for throughput per instance
  bool json = false;
  std::uint64_t max_line_bytes = default_max_line_bytes;  // a longer line is counted bad and skipped
};

struct JoinFigures {
  std::size_t request_lines = 0;
  std::size_t accepted = 0;
  std::size_t rejected_400 = 0;
  std::size_t response_lines = 0;
  std::size_t completed = 0;
  std::size_t client_disconnected = 0;
  std::size_t errors = 0;
  std::size_t completed_joined = 0;   // completed responses that joined a perf record
  std::size_t disaggregated = 0;      // of those, joined a proxy's record
  std::size_t joined_ctx = 0;         // and its context worker's
  std::size_t gen_expected = 0;       // of those, that went on to a generation worker
  std::size_t joined_gen = 0;         // and joined its record
  std::size_t usage_found = 0;        // completed responses whose answer carries usage
  std::size_t accepted_without_response = 0;
  std::size_t perf_records = 0;
  std::size_t perf_records_unjoined = 0;  // perf records no response line names
  std::size_t bad_lines = 0;
  std::optional<double> min_decode_ms;    // trace E2E less TTFT, over joined requests
  std::optional<double> min_ttft_ms;
  std::optional<double> min_hop_span_ms;  // a worker's prefill, KV transfer or decode, least
  std::size_t client_matched = 0;         // requests matched to a client result
  std::optional<double> max_abs_e2e_difference_ms;  // |client E2E from send - trace E2E|
  std::optional<double> median_e2e_difference_ms;
  std::vector<std::string> problems;  // a line a failed join, named
  std::optional<std::filesystem::path> csv;  // where requests.csv went
  std::size_t csv_rows = 0;
  std::optional<std::filesystem::path> html;  // where the report went
};

JoinFigures join_attempt(const JoinOptions& options);
// The figures as text (a few lines) or JSON.
void print_join(const JoinFigures& figures, bool json, std::ostream& out);
// Exit 0 when every completed response joined its perf records (a disaggregated one all
// three) and carries usage, no request line was left without its response and no span is
// negative; 1 otherwise.
int run_join(const JoinOptions& options, std::ostream& out, std::ostream& err);

}  // namespace jsonl_perf
