// A run's report: one self-contained HTML page (no script, no external resource) read
// from requests.csv's rows, as the reference's large-scale-serving report reads its
// own. §0 the headline metrics, the instance over time and latency over time; §1 the
// latency phases by containment, tokens, each route and kind, each hop of a
// disaggregated run, the client's view beside the server's, and the requests that did
// not complete by cause.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "run_blocks.hpp"

namespace jsonl_perf::report {

struct RunReportInput {
  std::string title;  // what the run is, e.g. its attempt directory
  std::vector<Request> requests;
  // The engine instances serving the run (a server, or context and generation workers):
  // the reference's throughput is per GPU; a run here has instances in their place.
  double instances = 1;
  bool client_results = false;  // whether the load client's results were read
  std::map<std::string, std::size_t> client_failures;  // the client's outcomes other than ok
};

std::string run_report_html(const RunReportInput& input);

}  // namespace jsonl_perf::report
