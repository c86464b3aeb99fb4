// `jsonl-perf serve`: an OpenAI-compatible HTTP/1.1 server on Boost.Beast whose model is
// simulated and whose recording is the reference server's, through
// jsonl::recording::RequestRecorder. As a worker (role server, context or generation) it
// answers requests itself, running the hop a body's disaggregated_params name; as a proxy
// it forwards each to a context worker, then to a generation worker.
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>

#include "model.hpp"
#include "proxy.hpp"
#include "recording.hpp"
#include "recording_peers.hpp"


namespace jsonl_perf::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 8000;          // 0: any free port (the one taken is printed)
  jsonl::recording::RecorderOptions recording;  // no output directory: nothing recorded
  RecordingPeer recording_peer = RecordingPeer::none;  // the serve benchmark's peers instead of the writers
  ModelOptions model;
  std::size_t body_limit = std::size_t{16} << 20;     // larger bodies get 413
  std::chrono::milliseconds header_timeout{10'000};   // a request's headers, then its body, each
  std::chrono::milliseconds write_timeout{30'000};    // a frame a client does not take
  std::chrono::milliseconds drain_timeout{10'000};    // requests in flight at a stop signal
  unsigned threads = 1;                               // threads running the connections
  std::optional<ProxyOptions> proxy;                  // set: a disaggregated proxy
};

// Serves until SIGINT or SIGTERM (SIGHUP asks the writers to rotate, through
// options.recording.rotation_requests), then stops accepting, lets the requests in flight end
// (those still going after the drain timeout end as errors, cause "server_shutdown"),
// closes the writers and prints their accounting to `err`. Prints
// "listening on http://HOST:PORT" to `out` once bound. Returns the exit status.
int run_serve(const ServeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace jsonl_perf::serve
