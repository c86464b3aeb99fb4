// A proxy's request on its client connection: the context hop, then the generation hop,
// whose answer is relayed to the client as it comes.
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "library_names.hpp"
#include "sse.hpp"
#include "connection.hpp"

namespace jsonl_perf::serve {
namespace {

using jsonl::recording::Outcome;
using jsonl::recording::Termination;

// The first choice's object of a chat or completion answer, if it has one.
json::object* first_choice(json::value& answer) {
  json::object* object = answer.if_object();
  json::value* choices = object ? object->if_contains("choices") : nullptr;
  json::array* list = choices ? choices->if_array() : nullptr;
  return list && !list->empty() ? list->front().if_object() : nullptr;
}

// Reads a worker's whole answer into `answer`: empty when it is a JSON object whose first
// choice is an object; otherwise what is wrong with it, to follow "answered".
std::string read_whole_answer(const std::string& text, json::value& answer) {
  boost::system::error_code error;
  answer = json::parse(text, error);
  if (error) return "with what is not JSON (" + error.message() + ")";
  return first_choice(answer) ? std::string() : std::string("without a choice");
}

std::string error_event(unsigned status, const std::string& message) {
  return sse::frame(json::serialize(json::object{{"error", {{"message", message}, {"type", "api_error"}, {"code", status}}}}));
}

// What a worker's error answer says, without its address (its detail or message).
std::string worker_message(std::string_view body, unsigned status) {
  boost::system::error_code failed;
  const json::value value = json::parse(body, failed);
  if (!failed && value.is_object()) {
    for (const char* key : {"detail", "error", "message"}) {
      if (const json::value* found = value.get_object().if_contains(key)) {
        return found->is_string() ? std::string(found->get_string()) : json::serialize(*found);
      }
    }
  }
  return "the worker answered with status " + std::to_string(status);
}

}  // namespace

void Connection::forward() {
  if (closed_) return finish(Outcome::error, Termination{"server_shutdown", "the server stopped before the answer began"});
  InFlightRequest& g = *generation_;
  ProxyState& p = *g.proxy;
  Upstreams& upstreams = *server_.upstreams();
  p.report.disagg_request_id = upstreams.next_disagg_request_id();
  p.report.ctx_dispatch_time = jsonl::recording::steady_seconds();
  const Worker& worker = upstreams.next_context();
  p.report.ctx_server = worker.name;
  json::object body = p.client_body.as_object();
  body["stream"] = false;
  body.erase("stream_options");
  body["disaggregated_params"] =
      params_json({.request_type = HopType::context_only, .disagg_request_id = p.report.disagg_request_id});
  auto hop = p.hop = std::make_shared<Hop>(stream_.get_executor(), worker, upstreams.timeout());
  hop->send(std::string(route_path(g.route)), json::serialize(body),
            [self = shared_from_this(), hop](std::optional<HopFailure> failed) {
              if (failed) return self->on_context_answer(hop, std::move(failed));
              hop->read_all([self, hop](std::optional<HopFailure> failed) { self->on_context_answer(hop, std::move(failed)); });
            });
}

void Connection::on_context_answer(std::shared_ptr<Hop> hop, std::optional<HopFailure> failed) {
  InFlightRequest& g = *generation_;
  ProxyState& p = *g.proxy;
  if (failed) return fail_upstream(failed->status, "context worker: " + failed->detail, {failed->cause, failed->detail});
  p.report.ctx = read_metric_fields([&](std::string_view name) { return hop->field(name); });
  const std::string text = hop->take_body();
  if (hop->status() != 200) {
    const std::string message = worker_message(text, hop->status());
    return fail_upstream(hop->status(), message, {"worker_error", "context worker " + hop->worker() + ": " + message});
  }
  json::value answer;
  std::string problem = read_whole_answer(text, answer);
  json::object* choice = problem.empty() ? first_choice(answer) : nullptr;
  const json::value* params = choice ? choice->if_contains("disaggregated_params") : nullptr;
  json::array wrong;
  const std::optional<DisaggregatedParams> handed =
      params && params->is_object() ? read_disaggregated_params(*choice, wrong) : std::nullopt;
  const json::value* reason = choice ? choice->if_contains("finish_reason") : nullptr;
  if (problem.empty() && (!handed || !handed->ctx_request_id || !wrong.empty())) {
    problem = "without usable disaggregated_params";
  }
  if (problem.empty() && (!reason || !reason->is_string())) problem = "without a finish_reason string";
  if (!problem.empty()) {
    const std::string detail = "context worker " + hop->worker() + " answered " + problem;
    return fail_upstream(502, detail, {"worker_error", detail});
  }
  p.report.ctx_request_id = handed->ctx_request_id;
  if (closed_) return finish(Outcome::error, Termination{"server_shutdown", "the server stopped before the answer began"});
  if (reason->get_string() != "length") return answer_from_context(std::move(answer), std::string(reason->get_string()));

  const Worker& worker = server_.upstreams()->next_generation();
  p.report.gen_server = worker.name;
  json::object body = p.client_body.as_object();
  DisaggregatedParams generation = *handed;
  generation.request_type = HopType::generation_only;
  generation.disagg_request_id = p.report.disagg_request_id;
  body["disaggregated_params"] = params_json(generation);
  auto next = p.hop = std::make_shared<Hop>(stream_.get_executor(), worker, server_.upstreams()->timeout());
  next->send(std::string(route_path(g.route)), json::serialize(body),
             [self = shared_from_this(), next](std::optional<HopFailure> failed) {
               self->on_generation_head(next, std::move(failed));
             });
}

// The context worker's answer is the whole answer (it stopped before the length asked
// for): sent to the client as the route sends it, without the hand-over fields.
void Connection::answer_from_context(json::value answer, std::string finish_reason) {
  InFlightRequest& g = *generation_;
  json::object& choice = *first_choice(answer);
  choice.erase("disaggregated_params");
  server_.recorder().first_token(g.record);
  if (!g.shape.stream) {
    const std::string text = json::serialize(answer);
    return respond_text(200, "application/json", text, false, {}, [this, answer = std::move(answer)](bool failed) mutable {
      if (failed) return finish(Outcome::client_disconnected, Termination{"client_disconnected", "write failed"});
      finish(Outcome::completed, std::nullopt, std::move(answer));
    });
  }
  const json::value* usage = answer.as_object().if_contains("usage");
  const auto count = [&](std::initializer_list<std::string_view> path) -> std::int64_t {
    const json::value* value = usage;
    for (std::string_view key : path) value = value && value->is_object() ? value->get_object().if_contains(key) : nullptr;
    return value && value->is_int64() ? value->get_int64() : 0;
  };
  const bool include_usage = g.shape.stream_options_given ? g.shape.include_usage : server_.recorder().recording();
  Answer stream(g.route, g.shape.model, count({"prompt_tokens"}), count({"prompt_tokens_details", "cached_tokens"}),
                include_usage);
  const json::value* message = choice.if_contains("message");
  const json::value* content = message && message->is_object() ? message->get_object().if_contains("content")
                                                                : choice.if_contains("text");
  const std::string text = content && content->is_string() ? std::string(content->get_string()) : std::string();
  std::string frames = stream.stream_opening() + stream.stream_token(text) +
                       stream.stream_closing(finish_reason);
  begin_stream([this, frames = std::move(frames)]() mutable { write_frame(std::move(frames), true, [this] { end_stream(); }); });
}

void Connection::on_generation_head(std::shared_ptr<Hop> hop, std::optional<HopFailure> failed) {
  InFlightRequest& g = *generation_;
  if (failed) return fail_upstream(failed->status, "generation worker: " + failed->detail, {failed->cause, failed->detail});
  if (hop->status() != 200 || !g.shape.stream) {
    return hop->read_all([self = shared_from_this(), hop](std::optional<HopFailure> failed) {
      InFlightRequest& g = *self->generation_;
      if (failed) {
        return self->fail_upstream(failed->status, "generation worker: " + failed->detail, {failed->cause, failed->detail});
      }
      const std::string text = hop->take_body();
      if (hop->status() != 200) {
        const std::string message = worker_message(text, hop->status());
        return self->fail_upstream(hop->status(), message,
                                   {"worker_error", "generation worker " + hop->worker() + ": " + message});
      }
      json::value answer;
      if (const std::string problem = read_whole_answer(text, answer); !problem.empty()) {
        const std::string detail = "generation worker " + hop->worker() + " answered " + problem;
        return self->fail_upstream(502, detail, {"worker_error", detail});
      }
      g.proxy->report.gen = read_metric_fields([&](std::string_view name) { return hop->field(name); });
      self->server_.recorder().first_token(g.record);
      first_choice(answer)->erase("disaggregated_params");
      // Serialized before the call: the order a call's arguments are evaluated in is
      // unspecified, and the callback's capture moves the answer away.
      std::string relayed = json::serialize(answer);
      self->respond_text(200, "application/json", std::move(relayed), false, {},
                         [self, answer = std::move(answer)](bool failed) mutable {
                           if (failed) {
                             return self->finish(Outcome::client_disconnected,
                                                 Termination{"client_disconnected", "write failed"});
                           }
                           self->finish(Outcome::completed, std::nullopt, std::move(answer));
                         });
    });
  }
  begin_stream([this, hop] { relay(hop); });
}

// The generation worker's events as they come, whole ones only, its metrics event kept
// for the record and not sent on; the next read once the client took these.
void Connection::relay(std::shared_ptr<Hop> hop) {
  hop->read_some([self = shared_from_this(), hop](std::optional<HopFailure> failed) {
    if (failed) {
      return self->fail_upstream(failed->status, "generation worker: " + failed->detail, {failed->cause, failed->detail});
    }
    ProxyState& p = *self->generation_->proxy;
    p.events.feed(hop->take_body());
    std::string events;
    while (const std::optional<std::string_view> event = p.events.next()) {
      if (is_metrics_event(*event)) {
        p.report.gen = read_metrics_event(*event);
      } else {
        events.append(*event).append(sse::event_end);
      }
    }
    // A last event without its blank line: relayed as it is, unless it is the metrics one.
    if (hop->body_done()) {
      if (std::string rest = p.events.take_rest(); !rest.empty() && !is_metrics_event(rest)) events += rest;
    }
    self->relay_events(hop, std::move(events));
  });
}

void Connection::relay_events(std::shared_ptr<Hop> hop, std::string events) {
  InFlightRequest& g = *generation_;
  if (!g.first_token && event_carries_token(g.route, events)) {
    g.first_token = jsonl::recording::steady_seconds();
    server_.recorder().first_token(g.record);
  }
  const bool done = hop->body_done();
  if (events.empty()) return done ? end_stream() : relay(hop);
  write_frame(std::move(events), true, [this, hop, done] { done ? end_stream() : relay(hop); });
}

// A hop failed or a worker refused: the client is answered with `status` before its
// answer began, or, once a stream is under way, the stream ends with an error event.
void Connection::fail_upstream(unsigned status, std::string message, Termination termination) {
  InFlightRequest& g = *generation_;
  if (g.hung_up) return finish(Outcome::client_disconnected, std::nullopt);  // no one to answer
  const json::value payload = {{"error", {{"message", message}, {"type", "api_error"}, {"code", status}}}};
  if (g.head) {
    return write_frame(error_event(status, message), true, [this, termination = std::move(termination)]() mutable {
      end_stream(Outcome::error, std::move(termination));
    });
  }
  respond_text(status, "application/json", json::serialize(json::object{{"detail", message}}), true, {},
               [this, payload, termination = std::move(termination)](bool) mutable {
                 finish(Outcome::error, std::move(termination), payload);
               });
}

}  // namespace jsonl_perf::serve
