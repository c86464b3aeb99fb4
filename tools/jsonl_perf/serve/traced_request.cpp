#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <utility>

#include "library_names.hpp"
#include "../python_json.hpp"
#include "traced_request.hpp"

namespace jsonl_perf::serve {

TracedRequest::TracedRequest(ServerContext& server, Route route, jsonl::recording::Headers headers,
                             unsigned failure_status)
    : server_(server),
      route_(route),
      record_(server.recorder().arrive(std::string(route_path(route)), std::move(headers))),
      failure_status_(failure_status) {}

void TracedRequest::answer(std::shared_ptr<Exchange> exchange) {
  exchange_ = std::move(exchange);
  std::string& text = exchange_->request().body();
  json::stream_parser parser({}, python_json_loads());
  beast::error_code error;
  const std::size_t used = parser.write(text.data(), text.size(), error);
  if (!error) parser.finish(error);
  if (error) {
    // Kept as text; the writer replaces invalid UTF-8 (and counts the line sanitized).
    json::array errors = json_error(used, error.message());
    const std::string answer = bad_request_body(route_, errors);
    server_.metrics().ended(route_, Ending::rejected_400);
    server_.recorder().reject_unparsed(record_, std::move(text),
                                       "JSONDecodeError: " + error.message() + " at byte " + std::to_string(used),
                                       std::move(errors));
    return exchange_->respond(400, "application/json", answer);
  }
  json::value body = parser.release();
  json::array errors = validate(route_, body, shape_);
  if (errors.empty()) disagg_ = read_disaggregated_params(body.get_object(), errors);
  const bool chat_or_completion = route_ == Route::chat_completions || route_ == Route::completions;
  if (disagg_ && !chat_or_completion) {
    errors.push_back(validation_error({"body", "disaggregated_params"}, "extra_forbidden",
                                      "Disaggregated serving takes /v1/chat/completions and /v1/completions"));
  }
  if (server_.upstreams() && route_ == Route::responses) {
    errors.push_back(validation_error({"path"}, "unsupported_route",
                                      "The disaggregated proxy serves /v1/chat/completions, /v1/completions and /v1/messages"));
  }
  if (!errors.empty()) return reject(std::move(errors), body);
  const auto& head = exchange_->request();
  const auto asked = head.find(beast::string_view(return_metrics_field.data(), return_metrics_field.size()));
  return_metrics_ = asked != head.end() && asked->value() == "1";
  server_.recorder().accept(record_, std::move(text), body);
  if (!shape_.stream) {
    exchange_->watch_for_hang_up([self = shared_from_this()] {
      self->hung_up_ = true;
      self->cancel();
    });
  }
  begin(std::move(body));
}

void TracedRequest::reject(json::array errors, const json::value& parsed) {
  server_.metrics().ended(route_, Ending::rejected_400);
  const std::string answer = bad_request_body(route_, errors);
  server_.recorder().reject(record_, std::move(exchange_->request().body()), parsed, std::move(errors));
  exchange_->respond(400, "application/json", answer);
}

RequestHandler::FailedAnswer TracedRequest::failed(std::string_view what) {
  server_.metrics().ended(route_, Ending::error);
  record_end(Outcome::error, Termination{"handler_error", std::string(what)}, std::nullopt);
  return {failure_status_, failure_body(route_, failure_status_, "the server failed to answer")};
}

void TracedRequest::finish(Outcome outcome, std::optional<Termination> termination, std::optional<json::value> payload) {
  if (hung_up_) {  // as the reference's proxy records it: nothing was sent
    outcome = Outcome::client_disconnected;
    termination.reset();
    payload.reset();
  } else if (exchange_->closing() && outcome != Outcome::completed) {
    outcome = Outcome::error;
    termination = Termination{"server_shutdown", "the server stopped before the answer ended"};
  }
  const Ending ending = outcome == Outcome::completed             ? Ending::completed
                        : outcome == Outcome::client_disconnected ? Ending::client_disconnected
                                                                  : Ending::error;
  server_.metrics().ended(route_, ending);
  record_end(outcome, std::move(termination), std::move(payload));
  exchange_->done(outcome != Outcome::completed || !exchange_->request().keep_alive());
}

void TracedRequest::respond_and_finish(json::value body, const MetricFields& fields) {
  // Serialized before the call: the order a call's arguments are evaluated in is
  // unspecified, and the callback's capture moves the body away.
  std::string text = json::serialize(body);
  exchange_->respond(200, "application/json", std::move(text), false, fields,
                     [self = shared_from_this(), body = std::move(body)](beast::error_code error) mutable {
                       if (error) return self->finish(Outcome::client_disconnected, Termination{"client_disconnected", "write failed"});
                       self->finish(Outcome::completed, std::nullopt, std::move(body));
                     });
}

void TracedRequest::begin_stream(std::function<void()> next) {
  exchange_->begin_stream([self = shared_from_this(), next = std::move(next)](beast::error_code error) {
    if (error) return self->finish(Outcome::client_disconnected, Termination{"client_disconnected", error.message()});
    next();
  });
}

void TracedRequest::send_frame(std::string frame, bool recorded, std::function<void()> next) {
  frame_ = std::move(frame);
  exchange_->write_frame(frame_, [self = shared_from_this(), recorded, next = std::move(next)](beast::error_code error) {
    if (error) {
      if (self->exchange_->closing()) return self->finish(Outcome::error, Termination{"server_shutdown", error.message()});
      const bool timed_out = error == beast::error::timeout;
      return self->finish(Outcome::client_disconnected,
                          Termination{timed_out ? "write_timeout" : "client_disconnected", error.message()});
    }
    if (recorded) self->server_.recorder().sent(self->record_, self->frame_);
    next();
  });
}

void TracedRequest::end_stream(Outcome outcome, std::optional<Termination> termination) {
  exchange_->end_stream([self = shared_from_this(), outcome, termination = std::move(termination)](beast::error_code error) mutable {
    if (error) return self->finish(Outcome::client_disconnected, Termination{"client_disconnected", error.message()});
    self->finish(outcome, std::move(termination));
  });
}

}  // namespace jsonl_perf::serve
