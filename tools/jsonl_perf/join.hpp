// `jsonl-perf join`: one row per request of a run's attempt directory, joining its
// request line, its response line (on trace_id) and the perf record of the engine that
// answered it (the response's client_id is the record's request_id), as a server that
// records both streams leaves them; with the load client's results, each request's
// trace E2E beside the E2E its client measured (matched on the x-request-id header).
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
  std::size_t usage_found = 0;        // completed responses whose answer carries usage
  std::size_t accepted_without_response = 0;
  std::size_t perf_records = 0;
  std::size_t perf_records_unjoined = 0;  // perf records no response line names
  std::size_t bad_lines = 0;
  std::optional<double> min_decode_ms;    // trace E2E less TTFT, over joined requests
  std::optional<double> min_ttft_ms;
  std::size_t client_matched = 0;         // requests matched to a client result
  std::optional<double> max_abs_e2e_difference_ms;  // |client E2E from send - trace E2E|
  std::optional<double> median_e2e_difference_ms;
  std::vector<std::string> problems;  // a line a failed join, named
};

JoinFigures join_attempt(const JoinOptions& options);
// The figures as text (a few lines) or JSON.
void print_join(const JoinFigures& figures, bool json, std::ostream& out);
// Exit 0 when every completed response joined a perf record and carries usage, and no
// request line was left without its response; 1 otherwise.
int run_join(const JoinOptions& options, std::ostream& out, std::ostream& err);

}  // namespace jsonl_perf
