// What a run's report computes from its requests.csv rows, each block apart from how
// the page draws it, by the rules of the reference's large-scale-serving report:
// percentiles by nearest rank; headline metrics over completed requests, per request or
// per whole minute of finish (the first and last partial minutes dropped); the instance's
// occupancy sampled once a second; latency phases by containment with each one's share
// of E2E (its sum over the requests that have it divided by theirs of E2E).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "requests_table.hpp"

namespace jsonl_perf::report {

// One row of requests.csv, as the report reads it. Times are seconds since the epoch,
// spans milliseconds.
struct Request {
  std::string trace_id;
  std::string route;
  std::optional<bool> stream;
  std::string status;  // completed, error, client_disconnected, no_response or rejected_400
  std::string session;
  std::string validation_errors;
  std::optional<double> started, finished;
  std::optional<double> parse_ms, proxy_dispatch_ms, ttft_ms, e2e_ms, decode_ms, prefill_queue_ms, prefill_ms,
      kv_transfer_ms, gen_decode_ms;
  std::optional<double> isl_total, isl_cached, isl_new, osl, cache_hit_ratio;
  std::optional<double> client_e2e_ms;  // the load client's E2E from send, where its result matched
};

// The table's rows as requests; `client_e2e_ms` by trace_id fills each one's client E2E.
// A value that is not a finite number is read as missing.
std::vector<Request> requests_of(const RequestsTable& table, const std::map<std::string, double>& client_e2e_ms);

bool completed(const Request& request);
// The earliest start of any request: where the blocks over time count seconds from.
std::optional<double> first_arrival(const std::vector<Request>& requests);

// n, mean and the nearest-rank percentiles (the value at round(q (n - 1)), halves to even,
// in the sorted values) of the values given; all empty for none.
struct Spread {
  std::size_t n = 0;
  std::optional<double> mean, p10, p25, p50, p75, p90, p99, max;
};
Spread spread(std::vector<double> values);

// The completed requests that finished in one whole minute of the run's window (the
// first start to the last finish of its completed requests).
struct Minute {
  double start = 0;
  std::size_t requests = 0;
  double osl = 0, isl_new = 0, e2e_s = 0;
};
std::vector<Minute> whole_minutes(const std::vector<Request>& requests);

// A headline row: the spread of a per-request value, or of a per-minute one whose mean
// is the whole window's value (Σ over every completed request over Σ E2E, or over the
// window's length and the instances), not the minutes' plain mean.
struct Headline {
  std::string block, label, unit;
  bool per_minute = false;
  Spread spread;
};
std::vector<Headline> headlines(const std::vector<Request>& requests, double instances);

// The instance once a second, at each whole second from the first answered request's
// start to the last one's finish (a week at most): conversations (a session's first
// start to its last finish; a request without a session is its own), requests in
// flight, in prefill (first token less prefill to first token) and in decode (first
// token to finish); a span counts from its start up to, not at, its end; rejected and
// unanswered requests left out.
struct Occupancy {
  double at = 0;  // seconds since the first arrival
  std::size_t conversations = 0, in_flight = 0, in_prefill = 0, in_decode = 0;
};
std::vector<Occupancy> occupancy(const std::vector<Request>& requests);

// TTFT and E2E of the completed requests by the window of their finish.
struct LatencyWindow {
  double at = 0;  // the window's start, seconds since the first arrival
  double width = 0;
  std::size_t requests = 0;
  Spread ttft, e2e;
};
// Windows of the shortest of 1, 5, 10, 30 and 60 s, 5, 10 and 30 min and an hour that
// makes at most most_latency_windows (an hour's windows, however many, past that).
inline constexpr double most_latency_windows = 120;
std::vector<LatencyWindow> latency_over_time(const std::vector<Request>& requests);

// A latency phase of the completed requests; depth 1 lies inside the last depth 0 row
// above it, depth 2 inside the last depth 1.
struct Phase {
  std::string label;
  int depth = 0;
  Spread spread;
  std::optional<double> share_of_e2e;
};
std::vector<Phase> phases(const std::vector<Request>& requests);
// The same of a disaggregated run's hops: the proxy's dispatch, the context worker's
// queue and prefill, the generation worker's KV transfer and decode.
std::vector<Phase> hops(const std::vector<Request>& requests);

struct TokenRow {
  std::string label;
  Spread spread;
};
std::vector<TokenRow> tokens(const std::vector<Request>& requests);

// The requests of one route and kind (streamed or whole).
struct Breakdown {
  std::string route, kind;
  std::size_t requests = 0, completed = 0;
  Spread ttft, e2e, osl;
};
std::vector<Breakdown> by_route_and_kind(const std::vector<Request>& requests);

// The client's E2E beside the trace's, over the completed requests the client's results
// matched.
struct ClientView {
  Spread client_e2e, server_e2e, difference;  // difference: client less server, per request
};
ClientView client_view(const std::vector<Request>& requests);

// Requests that did not complete, by where they were seen and why: the server's
// status (a 400's validation errors), then the load client's outcomes other than ok.
struct Cause {
  std::string seen_by, cause;
  std::size_t requests = 0;
};
std::vector<Cause> refusals_and_errors(const std::vector<Request>& requests,
                                       const std::map<std::string, std::size_t>& client_failures);

}  // namespace jsonl_perf::report
