// What `jsonl-perf serve` shows at /metrics.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string>

#include "openai.hpp"
#include "recording.hpp"


namespace jsonl_perf::serve {

// Why a request was refused before it reached a handler (never traced).
enum class Refusal : std::size_t { body_too_large, header_timeout, body_timeout, malformed_request, count };
// How a request that reached a handler ended.
enum class Ending : std::size_t { rejected_400, completed, client_disconnected, error, count };

// The server's own families (connections, refusals, requests by route and ending) as
// prometheus-cpp counters and gauges in one registry, and the recorder's writers through
// jsonl's collectable; serialized by prometheus-cpp. Every member may be called from any
// thread. Lives no longer than the recorder it reads.
class ServerMetrics {
 public:
  explicit ServerMetrics(const jsonl::recording::RequestRecorder& recorder);

  void connection_opened();
  void connection_closed();
  void refused(Refusal reason);
  void ended(Route route, Ending ending);
  // An exception ended a request (the session's exception boundary).
  void exception();

  // The exposition in Prometheus's text format: the writers' families, then the
  // server's.
  std::string text() const;

 private:
  using Endings = std::array<prometheus::Counter*, std::size_t(Ending::count)>;

  prometheus::Registry registry_;
  std::unique_ptr<prometheus::Collectable> writers_;
  prometheus::Counter& connections_;
  prometheus::Gauge& connections_open_;
  prometheus::Counter& exceptions_;
  std::array<prometheus::Counter*, std::size_t(Refusal::count)> refused_;
  std::array<Endings, every_route.size()> endings_;
};

}  // namespace jsonl_perf::serve
