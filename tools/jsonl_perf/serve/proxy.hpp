// `jsonl-perf serve --role proxy`: the front end of a disaggregated deployment, as the
// reference's (openai_disagg_server.py). It validates and traces each request as a server
// does, assigns its disagg_request_id, sends it to a context worker (context_only, not
// streamed), then to a generation worker (generation_only, with what the context worker
// returned), relays that answer to the client, and records the proxy's perf record
// (perf_metrics-disagg-*) with each hop's times, which it asks the workers for.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/json/value.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "hop.hpp"
#include "recording.hpp"

namespace jsonl_perf::serve {

struct ProxyOptions {
  std::vector<std::string> ctx_urls;  // http://HOST:PORT of each context worker
  std::vector<std::string> gen_urls;  // and of each generation worker
  std::chrono::milliseconds hop_timeout{180'000};  // the reference's default
};

// The proxy's workers, taken in turn, and its request ids.
class Upstreams {
 public:
  // Throws std::invalid_argument for a URL that is not http://HOST:PORT or does not resolve.
  Upstreams(const ProxyOptions& options, boost::asio::io_context& context);

  const Worker& next_context();
  const Worker& next_generation();
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Unique across this process's life and, as it starts from the wall clock's
  // milliseconds times 2^20, across its restarts: the join key of every record.
  std::int64_t next_disagg_request_id();

  // Lines each worker's steady clock up with this process's, as the reference's proxy
  // does at start: the NTP estimate from the least delayed of a few round trips to GET
  // /steady_clock_offset, sent back with POST when the delay bounds its error to 5 ms.
  // What it did for each worker goes to `log`.
  void align_clocks(std::ostream& log);

 private:
  std::vector<Worker> context_;
  std::vector<Worker> generation_;
  std::chrono::milliseconds timeout_;
  std::atomic<std::uint64_t> next_context_{0};
  std::atomic<std::uint64_t> next_generation_{0};
  std::atomic<std::int64_t> last_id_{0};
};

}  // namespace jsonl_perf::serve
