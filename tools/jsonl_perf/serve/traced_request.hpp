// A request to a generation route, traced from its arrival to its last byte: what the
// model's handler and the proxy's share. It reads the body as Python does, validates it
// as the reference's models do, records it accepted or rejected, watches for a hang-up
// while an answer sent whole is made, and records how the request ended.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "handler.hpp"
#include "recording.hpp"

namespace jsonl_perf::serve {

class TracedRequest : public RequestHandler, public std::enable_shared_from_this<TracedRequest> {
 public:
  // `failure_status`: what a client gets when an exception ends the request.
  TracedRequest(ServerContext& server, Route route, jsonl::recording::Headers headers, unsigned failure_status);

  void answer(std::shared_ptr<Exchange> exchange) final;
  FailedAnswer failed(std::string_view what) final;

 protected:
  using Outcome = jsonl::recording::Outcome;
  using Termination = jsonl::recording::Termination;

  // The request is valid and recorded accepted: answer it.
  virtual void begin(boost::json::value body) = 0;
  // Records the request's end with the role's report.
  virtual void record_end(Outcome outcome, std::optional<Termination> termination,
                          std::optional<boost::json::value> payload) = 0;

  // Records the end (as its client left it, when it hung up; as the stop's error, when the
  // server closed the session first) and ends the exchange.
  void finish(Outcome outcome, std::optional<Termination> termination,
              std::optional<boost::json::value> payload = std::nullopt);
  // Sends `body` whole, then finishes completed, or client_disconnected when the write fails.
  void respond_and_finish(boost::json::value body, const MetricFields& fields = {});
  // The stream's head, then `next`; one chunk (recorded as sent when `recorded`), then
  // `next`; the stream's end, then finishes as `outcome`. A failed write finishes.
  void begin_stream(std::function<void()> next);
  void send_frame(std::string frame, bool recorded, std::function<void()> next);
  void end_stream(Outcome outcome = Outcome::completed, std::optional<Termination> termination = std::nullopt);

  // `step` as a completion of the handler's own, holding it alive (Exchange::guard).
  template <class Step>
  auto guard(Step step) {
    return exchange_->guard([self = shared_from_this(), step = std::move(step)](auto&&... arguments) mutable {
      step(std::forward<decltype(arguments)>(arguments)...);
    });
  }

  ServerContext& server_;
  const Route route_;
  jsonl::recording::RequestRecorder::Request record_;
  std::shared_ptr<Exchange> exchange_;
  RequestShape shape_;
  std::optional<DisaggregatedParams> disagg_;  // a worker's hop of a disaggregated request
  bool return_metrics_ = false;                // the client asked for the worker's metrics
  bool hung_up_ = false;                       // the client left before the answer went out
  std::string frame_;                          // the chunk being written

 private:
  void reject(boost::json::array errors, const boost::json::value& parsed);

  const unsigned failure_status_;
};

}  // namespace jsonl_perf::serve
