// `jsonl-perf fleet`: a deployment in processes of its own, driven by the open-loop
// client, stopped cleanly, and its run directory laid out as the reference's deployments
// lay theirs out (RUN/attempt-NNN/{perf_metrics,request_trace}); then the perf summary,
// the client's latency table, the books verified, the join and the HTML report.
// --mode aggregated: one server. --mode disaggregated: --ctx context workers and --gen
// generation workers, each its own process and port, behind a proxy the client drives.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "client.hpp"

namespace jsonl_perf::serve {

struct FleetOptions {
  std::string mode = "aggregated";
  unsigned ctx_workers = 1;  // disaggregated
  unsigned gen_workers = 1;
  std::filesystem::path output_dir = "fleet_out";  // RUN
  std::string host = "127.0.0.1";
  ClientOptions client;                     // its url is the server's
  std::vector<std::string> server_arguments;  // passed on to `serve` (model, limits, recording)
  double stop_timeout = 30;                 // seconds the server may take to stop
};

int run_fleet(const FleetOptions& options, std::ostream& out, std::ostream& err);

// RUN/attempt-NNN: the first number not taken, from 001 (a restart is a new attempt).
std::filesystem::path next_attempt_dir(const std::filesystem::path& run_dir);

}  // namespace jsonl_perf::serve
