#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <string>
#include <string_view>
#include <utility>

#include "library_names.hpp"
#include "session.hpp"

namespace jsonl_perf::serve {
namespace {

// A body over the limit is refused alike whether its declared length or its bytes said so.
constexpr std::string_view too_large_answer = R"({"detail":"request body too large"})";

}  // namespace

PeerActivity peek_at_peer(tcp::socket& socket) {
  char byte;
  beast::error_code error;
  // Only synchronous calls heed the mode, and a session makes no other.
  socket.non_blocking(true, error);
  if (!error) socket.receive(net::buffer(&byte, 1), net::socket_base::message_peek, error);
  if (!error) return PeerActivity::sent_more;
  return error == net::error::would_block ? PeerActivity::nothing : PeerActivity::hung_up;
}

Session::Session(tcp::socket socket, ServerContext& server) : stream_(std::move(socket)), server_(server) {
  server_.metrics().connection_opened();
}

Session::~Session() {
  server_.metrics().connection_closed();
  server_.closed(this);
}

void Session::start() {
  // Frames are small and each must leave as it is written, not wait for the next.
  beast::error_code ignored;
  stream_.socket().set_option(tcp::no_delay(true), ignored);
  server_.opened(shared_from_this());
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_request(); });
}

void Session::stop(bool now) {
  net::dispatch(stream_.get_executor(), [self = shared_from_this(), now] {
    if (!self->in_request_ || now) self->close_now();
  });
}

void Session::close_now() {
  if (closed_) return;
  closed_ = true;
  if (handler_) handler_->cancel();
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}

void Session::read_request() {
  if (closed_ || server_.stopping()) return close_now();
  parser_.emplace();
  parser_->body_limit(server_.options().body_limit);
  stream_.expires_after(server_.options().header_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code error, std::size_t) { self->on_header(error); });
}

void Session::on_header(beast::error_code error) {
  if (error == http::error::body_limit) {  // its declared length, before a byte of the body
    return refuse(Refusal::body_too_large, 413, "application/json", std::string(too_large_answer));
  }
  if (error) {
    // A keep-alive connection that sent nothing more is idle, not refused.
    if (error == beast::error::timeout && parser_->got_some()) {
      server_.metrics().refused(Refusal::header_timeout);
    } else if (error != beast::error::timeout && error != http::error::end_of_stream &&
               error != net::error::operation_aborted && error != net::error::connection_reset) {
      return refuse(Refusal::malformed_request, 400, "text/plain", "malformed request: " + error.message() + "\n");
    }
    return close_now();
  }
  in_request_ = true;
  const auto& request = parser_->get();
  const std::string_view target(request.target().data(), request.target().size());
  const RouteEntry* entry = route_entry(target.substr(0, target.find('?')));
  const std::optional<Route> route = entry ? generation_route(entry->endpoint) : std::nullopt;
  run_step(requests_, [&] {
    if (route && request.method() == http::verb::post) {
      jsonl::recording::Headers headers;
      for (const auto& field : request) headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      handler_ = server_.arrive(*route, std::move(headers));
    } else {
      handler_ = service_request(server_, entry);
    }
  });
  if (!handler_) return;  // the boundary answered
  stream_.expires_after(server_.options().header_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code error, std::size_t) { self->on_body(error); });
}

void Session::on_body(beast::error_code error) {
  if (error == http::error::body_limit) {
    handler_.reset();
    return refuse(Refusal::body_too_large, 413, "application/json", std::string(too_large_answer));
  }
  if (error) {
    if (error == beast::error::timeout) server_.metrics().refused(Refusal::body_timeout);
    handler_.reset();
    return close_now();
  }
  stream_.expires_never();
  exchange_ = std::make_shared<Exchange>(shared_from_this(), requests_);
  run_step(requests_, [handler = handler_, exchange = exchange_] { handler->answer(exchange); });
}

void Session::refuse(Refusal reason, unsigned status, std::string content_type, std::string body) {
  server_.metrics().refused(reason);
  std::make_shared<Exchange>(shared_from_this(), requests_)->respond(status, std::move(content_type), std::move(body), true);
}

void Session::run_step(std::uint64_t number, const std::function<void()>& step) {
  if (number != requests_) return;
  try {
    step();
  } catch (const std::exception& error) {
    if (number == requests_) on_exception(error.what());
  } catch (...) {
    if (number == requests_) on_exception("an exception of no standard type");
  }
}

void Session::on_exception(std::string what) {
  server_.metrics().exception();
  const std::shared_ptr<RequestHandler> handler = std::move(handler_);
  const std::shared_ptr<Exchange> exchange = std::move(exchange_);
  ++requests_;  // every later step of the request is stale
  RequestHandler::FailedAnswer answer{500, json::serialize(json::object{{"detail", "the server failed to answer"}})};
  if (handler) {
    handler->cancel();
    try {
      answer = handler->failed(what);
    } catch (...) {  // its record is lost with it; the answer below still goes out
    }
  }
  if (writing_ || (exchange && exchange->stream_begun())) return close_now();  // part of it went out
  std::make_shared<Exchange>(shared_from_this(), requests_)->respond(answer.status, "application/json", std::move(answer.body), true);
}

void Session::end_request(bool close) {
  ++requests_;
  handler_.reset();
  exchange_.reset();
  in_request_ = false;
  if (close || closed_ || server_.stopping()) return close_now();
  read_request();
}

Exchange::Exchange(std::shared_ptr<Session> session, std::uint64_t number) : session_(std::move(session)), number_(number) {}

HttpRequest& Exchange::request() const { return session_->parser_->get(); }
net::any_io_executor Exchange::executor() const { return session_->stream_.get_executor(); }
bool Exchange::closing() const { return session_->closed_; }

void Exchange::run_step(const std::function<void()>& step) const { session_->run_step(number_, step); }

void Exchange::respond(unsigned status, std::string content_type, std::string body, bool close, const MetricFields& fields,
                       Written written) {
  Session& session = *session_;
  ++session.watch_;  // the answer goes out: a hang-up is now a failed write
  auto response = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(status),
                                                                      session.parser_ ? request().version() : 11);
  response->set(http::field::content_type, content_type);
  for (const auto& [name, value] : fields) response->set(name, value);
  response->body() = std::move(body);
  response->keep_alive(!close && session.parser_ && request().keep_alive());
  response->prepare_payload();
  session.stream_.expires_after(session.server_.options().write_timeout);
  session.writing_ = true;
  http::async_write(session.stream_, *response, [self = shared_from_this(), response, written = std::move(written)](
                                                    beast::error_code error, std::size_t) {
    self->session_->writing_ = false;
    if (written) return self->run_step([&] { written(error); });
    if (self->number_ == self->session_->requests_) self->session_->end_request(error || !response->keep_alive());
  });
}

void Exchange::begin_stream(Written written) {
  Session& session = *session_;
  head_.emplace(http::status::ok, request().version());
  head_->set(http::field::content_type, "text/event-stream");
  head_->set(http::field::cache_control, "no-cache");
  head_->keep_alive(request().keep_alive());
  head_->chunked(true);
  head_writer_.emplace(*head_);
  session.stream_.expires_after(session.server_.options().write_timeout);
  session.writing_ = true;
  http::async_write_header(session.stream_, *head_writer_,
                           [self = shared_from_this(), written = std::move(written)](beast::error_code error, std::size_t) {
                             self->session_->writing_ = false;
                             self->run_step([&] { written(error); });
                           });
}

void Exchange::write_frame(const std::string& frame, Written written) {
  Session& session = *session_;
  session.stream_.expires_after(session.server_.options().write_timeout);
  session.writing_ = true;
  net::async_write(session.stream_, http::make_chunk(net::buffer(frame)),
                   [self = shared_from_this(), written = std::move(written)](beast::error_code error, std::size_t) {
                     self->session_->writing_ = false;
                     self->run_step([&] { written(error); });
                   });
}

void Exchange::end_stream(Written written) {
  session_->writing_ = true;
  net::async_write(session_->stream_, http::make_chunk_last(),
                   [self = shared_from_this(), written = std::move(written)](beast::error_code error, std::size_t) {
                     self->session_->writing_ = false;
                     self->run_step([&] { written(error); });
                   });
}

void Exchange::watch_for_hang_up(std::function<void()> hung_up) {
  Session& session = *session_;
  session.stream_.socket().async_wait(
      tcp::socket::wait_read, [self = shared_from_this(), watch = ++session.watch_, hung_up = std::move(hung_up)](
                                  beast::error_code error) mutable {
        Session& session = *self->session_;
        if (watch != session.watch_ || error == net::error::operation_aborted) return;
        if (!error) {
          const PeerActivity activity = peek_at_peer(session.stream_.socket());
          if (activity == PeerActivity::sent_more) return;  // a next request's bytes
          if (activity == PeerActivity::nothing) return self->watch_for_hang_up(std::move(hung_up));
        }
        self->run_step(hung_up);
      });
}

void Exchange::done(bool close) {
  if (number_ == session_->requests_) session_->end_request(close);
}

}  // namespace jsonl_perf::serve
