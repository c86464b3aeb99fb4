// Headers before the modules: no #include may follow an import.
#include <prometheus/family.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

#include "server_metrics.hpp"

import jsonl.prometheus;

namespace jsonl_perf::serve {
namespace {

// Each enum's label values, in the enum's order and complete: checked here, so that a
// value added to an enum or moved in it cannot take another's name.
template <class Enum>
using Names = std::array<std::pair<Enum, const char*>, std::size_t(Enum::count)>;

template <class Enum>
constexpr bool in_enum_order(const Names<Enum>& names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i].first != Enum(i)) return false;
  }
  return true;
}

constexpr Names<Refusal> refusal_names{{{Refusal::body_too_large, "body_too_large"},
                                        {Refusal::header_timeout, "header_timeout"},
                                        {Refusal::body_timeout, "body_timeout"},
                                        {Refusal::malformed_request, "malformed_request"}}};
constexpr Names<Ending> ending_names{{{Ending::rejected_400, "rejected_400"},
                                      {Ending::completed, "completed"},
                                      {Ending::client_disconnected, "client_disconnected"},
                                      {Ending::error, "error"}}};
static_assert(in_enum_order(refusal_names));
static_assert(in_enum_order(ending_names));

prometheus::Counter& counter(prometheus::Registry& registry, const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

}  // namespace

ServerMetrics::ServerMetrics(const jsonl::recording::RequestRecorder& recorder)
    : writers_(std::make_unique<jsonl::WritersCollectable>([&recorder] {
        const jsonl::recording::RecordingDestination* destination = recorder.destination();
        return destination ? destination->writer_metrics() : std::vector<jsonl::WriterMetrics>{};
      })),
      connections_(counter(registry_, "jsonl_serve_connections_total", "Connections accepted.")),
      connections_open_(prometheus::BuildGauge()
                            .Name("jsonl_serve_connections_open")
                            .Help("Connections open now.")
                            .Register(registry_)
                            .Add({})),
      exceptions_(counter(registry_, "jsonl_serve_exceptions_total",
                          "Requests an exception ended (answered 500, or 502 on a proxy, when nothing was sent yet).")) {
  auto& refusals = prometheus::BuildCounter()
                       .Name("jsonl_serve_refused_total")
                       .Help("Requests refused before reaching a handler (never traced), by reason.")
                       .Register(registry_);
  for (std::size_t i = 0; i < refused_.size(); ++i) refused_[i] = &refusals.Add({{"reason", refusal_names[i].second}});
  auto& requests = prometheus::BuildCounter()
                       .Name("jsonl_serve_requests_total")
                       .Help("Requests that reached a handler, by route and how they ended.")
                       .Register(registry_);
  for (const Route route : every_route) {
    for (std::size_t i = 0; i < std::size_t(Ending::count); ++i) {
      endings_[std::size_t(route)][i] = &requests.Add({{"route", std::string(route_path(route))}, {"status", ending_names[i].second}});
    }
  }
}

void ServerMetrics::connection_opened() {
  connections_.Increment();
  connections_open_.Increment();
}

void ServerMetrics::connection_closed() { connections_open_.Decrement(); }

void ServerMetrics::refused(Refusal reason) { refused_[std::size_t(reason)]->Increment(); }

void ServerMetrics::ended(Route route, Ending ending) { endings_[std::size_t(route)][std::size_t(ending)]->Increment(); }

void ServerMetrics::exception() { exceptions_.Increment(); }

std::string ServerMetrics::text() const {
  // Recording off (or into spdlog), the writers' families have no samples: left out.
  std::vector<prometheus::MetricFamily> families = writers_->Collect();
  std::erase_if(families, [](const prometheus::MetricFamily& family) { return family.metric.empty(); });
  for (prometheus::MetricFamily& family : registry_.Collect()) families.push_back(std::move(family));
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace jsonl_perf::serve
