// `jsonl-perf client`: an open-loop load client on Boost.Beast. Requests are sent at their
// scheduled times whatever the server does (on a kept-alive connection when one is idle,
// else a new one), and latency is
// measured from each request's intended send time, so a server that falls behind shows
// it in the figures instead of slowing the offered load.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "openai.hpp"

namespace jsonl_perf::serve {

struct ClientOptions {
  std::string url = "http://127.0.0.1:8000";
  double rate = 10;       // requests/s, evenly spaced
  double duration = 5;    // seconds of sending
  std::vector<Route> routes{Route::chat_completions};  // taken in turn
  double stream_fraction = 1.0;
  unsigned max_tokens = 16;
  std::uint64_t seed = 1;
  double timeout = 30;               // seconds a request may take before it is cut
  std::size_t max_in_flight = 800;   // beyond it a request is counted unsent, not delayed
  std::optional<std::filesystem::path> json_output;  // the results, with one row a request
};

// One request as the client saw it. Times in ms from the run's start; latencies from the
// intended send time; e2e_from_send_ms from the moment its connection was asked for.
struct RequestResult {
  std::uint64_t index = 0;
  std::string request_id;  // the x-request-id header it carried
  Route route = Route::chat_completions;
  bool stream = false;
  double scheduled_ms = 0;
  double sent_ms = 0;
  std::optional<double> ttft_ms;
  std::optional<double> e2e_ms;
  std::optional<double> e2e_from_send_ms;
  unsigned http_status = 0;   // 0: no response
  std::string outcome;        // ok, http_error, connect_error, read_error, timeout, unsent
  bool usage_found = false;
};

struct ClientReport {
  double seconds = 0;
  std::vector<RequestResult> requests;
};

ClientReport drive(const ClientOptions& options);

// The latency table: per route and kind (streamed or not), counts by outcome and
// percentiles of TTFT and E2E.
void print_client_report(const ClientReport& report, std::ostream& out);
std::string client_report_json(const ClientReport& report);

int run_client(const ClientOptions& options, std::ostream& out, std::ostream& err);

}  // namespace jsonl_perf::serve
