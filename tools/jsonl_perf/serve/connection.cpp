#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <utility>

#include "library_names.hpp"
#include "../python_json.hpp"
#include "connection.hpp"

namespace jsonl_perf::serve {
namespace {

using jsonl::recording::Outcome;
using jsonl::recording::Termination;
using SteadyTime = std::chrono::steady_clock::time_point;

SteadyTime steady_time(double seconds) {
  return SteadyTime(std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds)));
}

}  // namespace

Connection::Connection(net::ip::tcp::socket socket, ServerContext& server)
    : stream_(std::move(socket)), timer_(stream_.get_executor()), server_(server) {
  server_.metrics().connection_opened();
}

Connection::~Connection() {
  server_.metrics().connection_closed();
  server_.closed(this);
}

void Connection::start() {
  // Frames are small and each must leave as it is written, not wait for the next.
  beast::error_code ignored;
  stream_.socket().set_option(net::ip::tcp::no_delay(true), ignored);
  server_.opened(shared_from_this());
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_request(); });
}

void Connection::stop(bool now) {
  net::dispatch(stream_.get_executor(), [self = shared_from_this(), now] {
    if (!self->in_request_ || now) self->close_now();
  });
}

void Connection::close_now() {
  if (closed_) return;
  closed_ = true;
  timer_.cancel();
  if (generation_ && generation_->proxy && generation_->proxy->hop) generation_->proxy->hop->cancel();
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}

void Connection::read_request() {
  if (closed_ || server_.stopping()) return close_now();
  parser_.emplace();
  parser_->body_limit(server_.options().body_limit);
  stream_.expires_after(server_.options().header_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code error, std::size_t) { self->on_header(error); });
}

void Connection::on_header(beast::error_code error) {
  ServerMetrics& metrics = server_.metrics();
  if (error == http::error::body_limit) {  // its declared length, before a byte of the body
    metrics.refused(Refusal::body_too_large);
    return respond_text(413, "application/json", R"({"detail":"request body too large"})", true);
  }
  if (error) {
    // A keep-alive connection that sent nothing more is idle, not refused.
    if (error == beast::error::timeout && parser_->got_some()) {
      metrics.refused(Refusal::header_timeout);
    } else if (error != beast::error::timeout && error != http::error::end_of_stream &&
               error != net::error::operation_aborted && error != net::error::connection_reset) {
      metrics.refused(Refusal::malformed_request);
      return respond_text(400, "text/plain", "malformed request: " + error.message() + "\n", true);
    }
    return close_now();
  }
  in_request_ = true;
  const auto& request = parser_->get();
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  if (request.method() == http::verb::post) {
    if (const std::optional<Route> route = route_at(path)) {
      jsonl::recording::Headers headers;
      for (const auto& field : request) headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      generation_ = std::make_unique<InFlightRequest>();
      generation_->route = *route;
      generation_->record = server_.recorder().arrive(std::string(path), std::move(headers));
    }
  }
  stream_.expires_after(server_.options().header_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code error, std::size_t) { self->on_body(error); });
}

void Connection::on_body(beast::error_code error) {
  if (error == http::error::body_limit) {
    server_.metrics().refused(Refusal::body_too_large);
    generation_.reset();
    return respond_text(413, "application/json", R"({"detail":"request body too large"})", true);
  }
  if (error) {
    if (error == beast::error::timeout) server_.metrics().refused(Refusal::body_timeout);
    generation_.reset();
    return close_now();
  }
  stream_.expires_never();
  dispatch();
}

void Connection::dispatch() {
  if (generation_) return generate(generation_->route);
  const auto& request = parser_->get();
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const bool get = request.method() == http::verb::get;
  if (get && path == "/health") return respond_text(200, "text/plain", "");
  if (path == "/steady_clock_offset") return answer_clock_probe();
  if (get && path == "/metrics") return respond_text(200, "text/plain; version=0.0.4", server_.metrics().text());
  if (get && path == "/v1/models") {
    const std::string& name = server_.model().options().model_name;
    return respond_text(200, "application/json",
                        json::serialize(json::object{
                            {"object", "list"},
                            {"data", json::array{json::object{{"id", name}, {"object", "model"}, {"owned_by", "jsonl"}}}}}));
  }
  if (route_at(path) || path == "/health" || path == "/metrics" || path == "/v1/models") {
    return respond_text(405, "application/json", R"({"detail":"Method Not Allowed"})");
  }
  respond_text(404, "application/json", R"({"detail":"Not Found"})");
}

void Connection::reject(json::array errors, const json::value& parsed, std::optional<std::string> parse_error) {
  server_.metrics().ended(generation_->route, Ending::rejected_400);
  const std::string answer = bad_request_body(errors);
  std::string body = std::move(parser_->get().body());
  if (parse_error) {
    server_.recorder().reject_unparsed(generation_->record, std::move(body), std::move(*parse_error), std::move(errors));
  } else {
    server_.recorder().reject(generation_->record, std::move(body), parsed, std::move(errors));
  }
  generation_.reset();
  respond_text(400, "application/json", answer);
}

void Connection::generate(Route route) {
  InFlightRequest& g = *generation_;
  std::string& text = parser_->get().body();
  json::stream_parser parser({}, python_json_loads());
  beast::error_code error;
  const std::size_t used = parser.write(text.data(), text.size(), error);
  if (!error) parser.finish(error);
  if (error) {
    // Kept as text; the writer replaces invalid UTF-8 (and counts the line sanitized).
    return reject(json_error(used, error.message()), nullptr,
                  "JSONDecodeError: " + error.message() + " at byte " + std::to_string(used));
  }
  json::value body = parser.release();
  json::array errors = validate(route, body, g.shape);
  if (errors.empty()) g.disagg = read_disaggregated_params(body.get_object(), errors);
  if (g.disagg && route == Route::responses) {
    errors.push_back({{"loc", json::array{"body", "disaggregated_params"}},
                      {"type", "extra_forbidden"},
                      {"msg", "Disaggregated serving takes /v1/chat/completions and /v1/completions"}});
  }
  if (server_.upstreams() && route == Route::responses) {
    errors.push_back({{"loc", json::array{"path"}}, {"type", "unsupported_route"},
                      {"msg", "The disaggregated proxy serves /v1/chat/completions and /v1/completions"}});
  }
  if (!errors.empty()) return reject(std::move(errors), body, std::nullopt);
  const auto& head = parser_->get();
  const auto asked = head.find(beast::string_view(return_metrics_field.data(), return_metrics_field.size()));
  g.return_metrics = asked != head.end() && asked->value() == "1";
  server_.recorder().accept(g.record, std::move(text), body);
  if (!g.shape.stream) watch_for_hang_up();
  if (server_.upstreams()) {
    g.proxy = std::make_unique<ProxyState>();
    g.proxy->client_body = std::move(body);
    return forward();
  }
  const HopType hop = g.disagg ? g.disagg->request_type : HopType::context_and_generation;
  g.plan = server_.model().plan(g.shape.prompt_bytes, g.shape.max_tokens, hop);
  const bool include_usage = g.shape.stream_options_given ? g.shape.include_usage : server_.recorder().recording();
  g.answer.emplace(route, g.shape.model, g.plan.prompt_tokens, g.plan.cached_tokens, include_usage);
  g.engine_arrival = jsonl::recording::steady_seconds();
  g.scheduled = g.engine_arrival + g.plan.queue_seconds;
  if (!g.shape.stream) return schedule_next_token();
  begin_stream([this] {
    std::string opening = generation_->answer->stream_opening();
    if (opening.empty()) return schedule_next_token();
    write_frame(std::move(opening), true, [this] { schedule_next_token(); });
  });
}

void Connection::begin_stream(Next next) {
  InFlightRequest& g = *generation_;
  g.head.emplace(http::status::ok, parser_->get().version());
  g.head->set(http::field::content_type, "text/event-stream");
  g.head->set(http::field::cache_control, "no-cache");
  g.head->keep_alive(parser_->get().keep_alive());
  g.head->chunked(true);
  g.head_writer.emplace(*g.head);
  stream_.expires_after(server_.options().write_timeout);
  http::async_write_header(stream_, *g.head_writer,
                           [self = shared_from_this(), next = std::move(next)](beast::error_code error, std::size_t) {
                             if (error) return self->finish(Outcome::client_disconnected, Termination{"client_disconnected", error.message()});
                             next();
                           });
}

// GET: the two stamps of the reference's clock handshake, taken as the request is read
// and as its answer goes out. POST {"offset": seconds}: what every later record adds.
void Connection::answer_clock_probe() {
  const double received = jsonl::recording::steady_seconds();
  const auto& request = parser_->get();
  if (request.method() == http::verb::post) {
    boost::system::error_code error;
    const json::value body = json::parse(request.body(), error);
    const json::value* offset = !error && body.is_object() ? body.get_object().if_contains("offset") : nullptr;
    if (!offset || !offset->is_number()) {
      return respond_text(400, "application/json", R"({"detail":"expected {\"offset\": seconds}"})");
    }
    server_.recorder().set_steady_clock_offset(offset->to_number<double>());
    return respond_text(200, "application/json", "");
  }
  if (request.method() != http::verb::get) return respond_text(405, "application/json", R"({"detail":"Method Not Allowed"})");
  const double transmitted = jsonl::recording::steady_seconds();
  respond_text(200, "application/json",
               json::serialize(json::object{{"receive_ts", received}, {"transmit_ts", transmitted}}));
}

void Connection::watch_for_hang_up() {
  stream_.socket().async_wait(net::ip::tcp::socket::wait_read,
                              [self = shared_from_this(), watch = ++watch_](beast::error_code error) {
                                if (watch != self->watch_ || error == net::error::operation_aborted) return;
                                char byte;
                                beast::error_code read_error;
                                if (!error) {
                                  self->stream_.socket().receive(net::buffer(&byte, 1), net::socket_base::message_peek,
                                                                 read_error);
                                  if (!read_error) return;  // a next request's bytes
                                  if (read_error == net::error::would_block) return self->watch_for_hang_up();
                                }
                                self->on_hang_up();
                              });
}

// The answer being made stops: the model's timer or the proxy's hop fails at once, and
// finish() records the request as its client left it.
void Connection::on_hang_up() {
  InFlightRequest& g = *generation_;
  g.hung_up = true;
  timer_.cancel();
  if (g.proxy && g.proxy->hop) g.proxy->hop->cancel();
}

void Connection::schedule_next_token() {
  InFlightRequest& g = *generation_;
  const double due = g.next_token == 0 ? g.scheduled + g.plan.first_token_seconds
                                       : *g.last_token + g.plan.token_gaps[g.next_token - 1];
  timer_.expires_at(steady_time(due));
  timer_.async_wait([self = shared_from_this()](beast::error_code error) {
    if (error) return self->finish(Outcome::error, Termination{"server_shutdown", "the server stopped before the answer ended"});
    self->produce_token();
  });
}

void Connection::produce_token() {
  InFlightRequest& g = *generation_;
  const double now = jsonl::recording::steady_seconds();
  if (!g.first_token) {
    g.first_token = now;
    server_.recorder().first_token(g.record);
  }
  g.last_token = now;
  const std::string& token = g.plan.tokens[g.next_token++];
  if (g.shape.stream) return write_frame(g.answer->stream_token(token), true, [this] { after_token(); });
  g.answer->add_token(token);
  if (g.next_token < g.plan.tokens.size()) return schedule_next_token();
  json::value body = whole_answer();
  // Serialized before the call: the order a call's arguments are evaluated in is
  // unspecified, and the callback's capture moves the body away.
  std::string text = json::serialize(body);
  respond_text(200, "application/json", std::move(text), false, g.return_metrics ? worker_metrics() : MetricFields{},
               [this, body = std::move(body)](bool failed) mutable {
                 if (failed) return finish(Outcome::client_disconnected, Termination{"client_disconnected", "write failed"});
                 finish(Outcome::completed, std::nullopt, std::move(body));
               });
}

// After a streamed token: the next, or the closing frames, the worker's metrics event
// when asked for (not part of the answer, so not recorded) and the end.
void Connection::after_token() {
  InFlightRequest& g = *generation_;
  if (g.next_token < g.plan.tokens.size()) return schedule_next_token();
  write_frame(g.answer->stream_closing(g.plan.finish_reason), true, [this] {
    if (!generation_->return_metrics) return end_stream();
    write_frame(metrics_event(worker_metrics()), false, [this] { end_stream(); });
  });
}

// The answer sent whole; a context worker's carries what the generation worker needs.
json::value Connection::whole_answer() {
  InFlightRequest& g = *generation_;
  json::value body = g.answer->body(g.plan.finish_reason);
  if (g.disagg && g.disagg->request_type == HopType::context_only) {
    DisaggregatedParams handed = *g.disagg;
    handed.ctx_request_id = g.plan.request_id;
    handed.first_gen_tokens = json::array{g.plan.first_token_id};
    body.at("choices").at(0).as_object()["disaggregated_params"] = params_json(handed);
  }
  return body;
}

MetricFields Connection::worker_metrics() {
  InFlightRequest& g = *generation_;
  const double offset = server_.recorder().steady_clock_offset();
  const jsonl::recording::EngineReport report =
      server_.model().report(g.plan, g.engine_arrival, g.scheduled, g.first_token, g.last_token);
  const auto shifted = [offset](std::optional<double> time) { return time ? std::optional(*time + offset) : time; };
  return metric_fields({.arrival_time = report.arrival_time + offset,
                        .first_scheduled_time = report.first_scheduled_time + offset,
                        .first_token_time = shifted(report.first_token_time),
                        .last_token_time = shifted(report.last_token_time),
                        .kv_cache_transfer_start = shifted(report.kv_cache_transfer_start),
                        .kv_cache_transfer_end = shifted(report.kv_cache_transfer_end)});
}

void Connection::write_frame(std::string frame, bool recorded, Next next) {
  InFlightRequest& g = *generation_;
  g.frame = std::move(frame);
  stream_.expires_after(server_.options().write_timeout);
  net::async_write(stream_, http::make_chunk(net::buffer(g.frame)),
                   [self = shared_from_this(), recorded, next = std::move(next)](beast::error_code error, std::size_t) {
                     InFlightRequest& g = *self->generation_;
                     if (error) {
                       const bool timed_out = error == beast::error::timeout;
                       if (self->closed_) return self->finish(Outcome::error, Termination{"server_shutdown", error.message()});
                       return self->finish(Outcome::client_disconnected,
                                           Termination{timed_out ? "write_timeout" : "client_disconnected", error.message()});
                     }
                     if (recorded) self->server_.recorder().sent(g.record, g.frame);
                     next();
                   });
}

void Connection::end_stream(Outcome outcome, std::optional<Termination> termination) {
  net::async_write(stream_, http::make_chunk_last(),
                   [self = shared_from_this(), outcome, termination = std::move(termination)](beast::error_code error,
                                                                                              std::size_t) mutable {
                     if (error) return self->finish(Outcome::client_disconnected, Termination{"client_disconnected", error.message()});
                     self->finish(outcome, std::move(termination));
                   });
}

void Connection::finish(Outcome outcome, std::optional<Termination> termination, std::optional<json::value> payload) {
  InFlightRequest& g = *generation_;
  if (g.hung_up) {  // as the reference's proxy records it: nothing was sent
    outcome = Outcome::client_disconnected;
    termination.reset();
    payload.reset();
  } else if (closed_ && outcome != Outcome::completed) {
    outcome = Outcome::error;
    termination = Termination{"server_shutdown", "the server stopped before the answer ended"};
  }
  Ending ending = outcome == Outcome::completed             ? Ending::completed
                  : outcome == Outcome::client_disconnected ? Ending::client_disconnected
                                                            : Ending::error;
  server_.metrics().ended(g.route, ending);
  if (g.proxy) {
    if (g.proxy->hop) g.proxy->hop->cancel();
    server_.recorder().finish(g.record, outcome, g.proxy->report, std::move(payload), std::move(termination));
  } else {
    jsonl::recording::EngineReport report =
        server_.model().report(g.plan, g.engine_arrival, g.scheduled, g.first_token, g.last_token);
    if (g.disagg) {
      report.disagg_request_id = g.disagg->disagg_request_id;
      report.ctx_request_id =
          g.disagg->request_type == HopType::context_only ? std::optional(g.plan.request_id) : g.disagg->ctx_request_id;
    }
    server_.recorder().finish(g.record, outcome, report, std::move(payload), std::move(termination));
  }
  const bool keep_alive = parser_->get().keep_alive();
  generation_.reset();
  after_response(outcome != Outcome::completed || !keep_alive);
}

void Connection::respond_text(unsigned status, std::string content_type, std::string body, bool close,
                              const MetricFields& fields, std::function<void(bool)> written) {
  ++watch_;  // the answer goes out: a hang-up is now a failed write
  auto response = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(status),
                                                                      parser_ ? parser_->get().version() : 11);
  response->set(http::field::content_type, content_type);
  for (const auto& [name, value] : fields) response->set(name, value);
  response->body() = std::move(body);
  response->keep_alive(!close && parser_ && parser_->get().keep_alive());
  response->prepare_payload();
  stream_.expires_after(server_.options().write_timeout);
  http::async_write(stream_, *response, [self = shared_from_this(), response, written = std::move(written)](
                                            beast::error_code error, std::size_t) {
    if (written) return written(bool(error));
    self->after_response(error || !response->keep_alive());
  });
}

void Connection::after_response(bool close) {
  in_request_ = false;
  if (close || closed_ || server_.stopping()) return close_now();
  read_request();
}

}  // namespace jsonl_perf::serve
