// The proxy's handler: the context hop, then the generation hop, whose answer is relayed
// to the client as it comes. Every field read from a worker's answer is checked first: a
// worker answer the proxy cannot use gets the client a 502. A Messages request goes to
// the workers as the chat request it converts to, and their answers come back converted
// (anthropic.hpp).
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <utility>

#include "anthropic.hpp"
#include "library_names.hpp"
#include "sse.hpp"
#include "traced_request.hpp"
#include "worker_answers.hpp"

namespace jsonl_perf::serve {
namespace {

class ProxyRequest final : public TracedRequest {
 public:
  ProxyRequest(ServerContext& server, Route route, jsonl::recording::Headers headers)
      : TracedRequest(server, route, std::move(headers), 502) {}

  void cancel() override {
    if (hop_) hop_->cancel();
  }

 private:
  void begin(json::value body) override;
  void record_end(Outcome outcome, std::optional<Termination> termination, std::optional<json::value> payload) override;
  void on_context_answer(std::optional<HopFailure> failed);
  void answer_from_context(json::value answer, std::string finish_reason);
  void on_generation_head(std::optional<HopFailure> failed);
  void on_generation_whole(std::optional<HopFailure> failed);
  void relay();
  // A hop failed or a worker refused: the client is answered with `status` before its
  // answer began, or, once a stream is under way, the stream ends with an error event.
  void fail_upstream(unsigned status, std::string message, Termination termination);
  // The hop's failure, or the worker's error answer `text`, as the client is answered and
  // the request traced; `role` names the worker.
  void fail_hop(std::string_view role, const HopFailure& failure);
  void worker_refused(std::string_view role, const std::string& text);

  // A worker's whole answer to the client: as it is, or as the message it converts to.
  // One that does not convert gets the client a 500 and is traced conversion_error, with
  // `upstream_text`, what the worker answered.
  void answer_whole(json::value answer, std::string upstream_text);

  json::value client_body_;  // as the workers get it: a Messages request's chat request
  Route hop_route_ = route_;  // the route the workers answer
  std::unique_ptr<anthropic::StreamReframer> reframer_;  // a streamed Messages answer
  jsonl::recording::ProxyReport report_;
  std::shared_ptr<Hop> hop_;   // the hop under way
  sse::EventSplitter events_;  // the generation worker's stream
  bool first_token_seen_ = false;
};

void ProxyRequest::begin(json::value body) {
  if (exchange_->closing()) {
    return finish(Outcome::error, Termination{"server_shutdown", "the server stopped before the answer began"});
  }
  if (route_ == Route::messages) {
    client_body_ = anthropic::to_chat_request(body.as_object());  // taken by validation already
    hop_route_ = Route::chat_completions;
    if (shape_.stream) reframer_ = std::make_unique<anthropic::StreamReframer>(shape_.model);
  } else {
    client_body_ = std::move(body);
  }
  Upstreams& upstreams = *server_.upstreams();
  report_.disagg_request_id = upstreams.next_disagg_request_id();
  report_.ctx_dispatch_time = jsonl::recording::steady_seconds();
  const Worker& worker = upstreams.next_context();
  report_.ctx_server = worker.name;
  json::object hop_body = client_body_.as_object();
  hop_body["stream"] = false;
  hop_body.erase("stream_options");
  hop_body["disaggregated_params"] =
      params_json({.request_type = HopType::context_only, .disagg_request_id = report_.disagg_request_id});
  hop_ = std::make_shared<Hop>(exchange_->executor(), worker, upstreams.timeout());
  hop_->send(std::string(route_path(hop_route_)), json::serialize(hop_body), guard([this](std::optional<HopFailure> failed) {
               if (failed) return on_context_answer(std::move(failed));
               hop_->read_all(guard([this](std::optional<HopFailure> failed) { on_context_answer(std::move(failed)); }));
             }));
}

void ProxyRequest::fail_hop(std::string_view role, const HopFailure& failure) {
  fail_upstream(failure.status, std::string(role) + " worker: " + failure.detail, {failure.cause, failure.detail});
}

void ProxyRequest::worker_refused(std::string_view role, const std::string& text) {
  const std::string message = worker_message(text, hop_->status());
  fail_upstream(hop_->status(), message, {"worker_error", std::string(role) + " worker " + hop_->worker() + ": " + message});
}

void ProxyRequest::on_context_answer(std::optional<HopFailure> failed) {
  if (failed) return fail_hop("context", *failed);
  report_.ctx = read_metric_fields([&](std::string_view name) { return hop_->field(name); });
  const std::string text = hop_->take_body();
  if (hop_->status() != 200) return worker_refused("context", text);
  std::string problem;
  std::optional<ContextAnswer> read = read_context_answer(text, problem);
  if (!read) {
    const std::string detail = "context worker " + hop_->worker() + " answered " + problem;
    return fail_upstream(502, detail, {"worker_error", detail});
  }
  report_.ctx_request_id = read->handed.ctx_request_id;
  if (exchange_->closing()) {
    return finish(Outcome::error, Termination{"server_shutdown", "the server stopped before the answer began"});
  }
  if (read->finish_reason != "length") return answer_from_context(std::move(read->answer), std::move(read->finish_reason));

  const Worker& worker = server_.upstreams()->next_generation();
  report_.gen_server = worker.name;
  json::object body = client_body_.as_object();
  DisaggregatedParams generation = read->handed;
  generation.request_type = HopType::generation_only;
  generation.disagg_request_id = report_.disagg_request_id;
  body["disaggregated_params"] = params_json(generation);
  hop_ = std::make_shared<Hop>(exchange_->executor(), worker, server_.upstreams()->timeout());
  hop_->send(std::string(route_path(hop_route_)), json::serialize(body),
             guard([this](std::optional<HopFailure> failed) { on_generation_head(std::move(failed)); }));
}

// The context worker's answer is the whole answer (it stopped before the length asked
// for): sent to the client as the route sends it, without the hand-over fields.
void ProxyRequest::answer_from_context(json::value answer, std::string finish_reason) {
  json::object& choice = *first_choice(answer);
  choice.erase("disaggregated_params");
  server_.recorder().first_token(record_);
  if (!shape_.stream) {
    std::string text = json::serialize(answer);
    return answer_whole(std::move(answer), std::move(text));
  }
  const json::value* usage = answer.as_object().if_contains("usage");
  const auto count = [&](std::initializer_list<std::string_view> path) -> std::int64_t {
    const json::value* value = usage;
    for (std::string_view key : path) value = value && value->is_object() ? value->get_object().if_contains(key) : nullptr;
    return value && value->is_int64() ? value->get_int64() : 0;
  };
  const bool include_usage = shape_.stream_options_given ? shape_.include_usage : server_.recorder().recording();
  Answer stream(route_, shape_.model, count({"prompt_tokens"}), count({"prompt_tokens_details", "cached_tokens"}),
                include_usage, shape_.continuous_usage);
  const json::value* message = choice.if_contains("message");
  const json::value* content = message && message->is_object() ? message->get_object().if_contains("content")
                                                                : choice.if_contains("text");
  const std::string text = content && content->is_string() ? std::string(content->get_string()) : std::string();
  // One after another: each part counts what the one before made, and the operands of +
  // are evaluated in no set order.
  std::string frames = stream.stream_opening();
  frames += stream.stream_token(text);
  frames += stream.stream_closing(finish_reason);
  begin_stream([this, frames = std::move(frames)]() mutable { send_frame(std::move(frames), true, [this] { end_stream(); }); });
}

void ProxyRequest::on_generation_head(std::optional<HopFailure> failed) {
  if (failed) return fail_hop("generation", *failed);
  if (hop_->status() != 200 || !shape_.stream) {
    return hop_->read_all(guard([this](std::optional<HopFailure> failed) { on_generation_whole(std::move(failed)); }));
  }
  begin_stream([this] { relay(); });
}

void ProxyRequest::on_generation_whole(std::optional<HopFailure> failed) {
  if (failed) return fail_hop("generation", *failed);
  const std::string text = hop_->take_body();
  if (hop_->status() != 200) return worker_refused("generation", text);
  json::value answer;
  if (const std::string problem = read_whole_answer(text, answer); !problem.empty()) {
    const std::string detail = "generation worker " + hop_->worker() + " answered " + problem;
    return fail_upstream(502, detail, {"worker_error", detail});
  }
  report_.gen = read_metric_fields([&](std::string_view name) { return hop_->field(name); });
  server_.recorder().first_token(record_);
  first_choice(answer)->erase("disaggregated_params");
  answer_whole(std::move(answer), text);
}

void ProxyRequest::answer_whole(json::value answer, std::string upstream_text) {
  if (route_ != Route::messages) return respond_and_finish(std::move(answer));
  json::value message;
  try {
    message = anthropic::to_message(answer.as_object());
  } catch (const anthropic::ResponseError& error) {
    json::value payload = {{"upstream_body", std::move(upstream_text)}};
    return exchange_->respond(500, "application/json", anthropic::error_body("api_error", error.what()), true, {},
                              guard([this, payload = std::move(payload)](beast::error_code) mutable {
                                finish(Outcome::conversion_error, std::nullopt, std::move(payload));
                              }));
  }
  respond_and_finish(std::move(message));
}

// The generation worker's events as they come, whole ones only, its metrics event kept
// for the record and not sent on; the next read once the client took these.
void ProxyRequest::relay() {
  hop_->read_some(guard([this](std::optional<HopFailure> failed) {
    if (failed) return fail_hop("generation", *failed);
    events_.feed(hop_->take_body());
    RelayedEvents relayed = take_relayed_events(events_, hop_->body_done());
    if (reframer_) {
      try {
        relayed.events = reframer_->feed(relayed.events);
      } catch (const anthropic::ResponseError& error) {
        const std::string detail = "generation worker " + hop_->worker() + " answered " + error.what();
        return fail_upstream(502, detail, {"worker_error", detail});
      }
    }
    if (relayed.metrics) report_.gen = relayed.metrics;
    if (!first_token_seen_ && event_carries_token(route_, relayed.events)) {
      first_token_seen_ = true;
      server_.recorder().first_token(record_);
    }
    const bool done = hop_->body_done();
    if (reframer_ && done) relayed.events += reframer_->finish();  // a stream that ended without [DONE]
    if (relayed.events.empty()) return done ? end_stream() : relay();
    send_frame(std::move(relayed.events), true, [this, done] { done ? end_stream() : relay(); });
  }));
}

void ProxyRequest::fail_upstream(unsigned status, std::string message, Termination termination) {
  if (hung_up_) return finish(Outcome::client_disconnected, std::nullopt);  // no one to answer
  json::value payload = {{"error", {{"message", message}, {"type", "api_error"}, {"code", status}}}};
  if (route_ == Route::messages) payload = json::parse(anthropic::error_body(anthropic::error_type_of(status), message));
  if (exchange_->stream_begun()) {
    std::string frames = reframer_ ? reframer_->fail(message) : sse::frame(json::serialize(payload));
    return send_frame(std::move(frames), true, [this, termination = std::move(termination)]() mutable {
      end_stream(Outcome::error, std::move(termination));
    });
  }
  std::string answer = route_ == Route::messages ? json::serialize(payload) : json::serialize(json::object{{"detail", message}});
  exchange_->respond(status, "application/json", std::move(answer), true, {},
                     guard([this, payload = std::move(payload), termination = std::move(termination)](beast::error_code) mutable {
                       finish(Outcome::error, std::move(termination), std::move(payload));
                     }));
}

void ProxyRequest::record_end(Outcome outcome, std::optional<Termination> termination, std::optional<json::value> payload) {
  if (hop_) hop_->cancel();
  server_.recorder().finish(record_, outcome, report_, std::move(payload), std::move(termination));
}

}  // namespace

std::shared_ptr<RequestHandler> proxy_request(ServerContext& server, Route route, jsonl::recording::Headers headers) {
  return std::make_shared<ProxyRequest>(server, route, std::move(headers));
}

}  // namespace jsonl_perf::serve
