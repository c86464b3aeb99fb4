#include "hop.hpp"

#include <boost/asio/connect.hpp>
#include <boost/beast/http.hpp>

#include "disaggregation.hpp"
#include "library_names.hpp"

namespace jsonl_perf::serve {

Hop::Hop(const net::any_io_executor& executor, const Worker& worker, std::chrono::milliseconds timeout)
    : worker_(worker), timeout_(timeout), stream_(executor) {
  parser_.body_limit(std::uint64_t{256} << 20);
}

HopFailure Hop::failure(const boost::system::error_code& error, std::string_view step) const {
  const std::string detail = std::string(step) + " " + worker_.name + ": " + error.message();
  if (error == beast::error::timeout) return {504, "worker_timeout", detail};
  return {502, connected_ ? "worker_lost" : "worker_unreachable", detail};
}

void Hop::send(std::string target, std::string body, Done done) {
  request_.method(http::verb::post);
  request_.target(target);
  request_.version(11);
  request_.set(http::field::host, worker_.name);
  request_.set(http::field::content_type, "application/json");
  request_.set(return_metrics_field, "1");
  request_.keep_alive(false);
  request_.body() = std::move(body);
  request_.prepare_payload();
  stream_.expires_after(timeout_);
  stream_.async_connect(worker_.endpoints, [self = shared_from_this(), done = std::move(done)](
                                               boost::system::error_code error, const net::ip::tcp::endpoint&) mutable {
    if (error) return done(self->failure(error, "connecting to"));
    self->connected_ = true;
    boost::system::error_code ignored;
    self->stream_.socket().set_option(net::ip::tcp::no_delay(true), ignored);
    self->stream_.expires_after(self->timeout_);
    http::async_write(self->stream_, self->request_, [self, done = std::move(done)](boost::system::error_code error, std::size_t) mutable {
      if (error) return done(self->failure(error, "sending to"));
      self->stream_.expires_after(self->timeout_);
      http::async_read_header(self->stream_, self->buffer_, self->parser_,
                              [self, done = std::move(done)](boost::system::error_code error, std::size_t) {
                                if (error) return done(self->failure(error, "reading the answer of"));
                                done(std::nullopt);
                              });
    });
  });
}

void Hop::read_some(Done done) {
  if (parser_.is_done()) return done(std::nullopt);
  stream_.expires_after(timeout_);
  http::async_read_some(stream_, buffer_, parser_,
                        [self = shared_from_this(), done = std::move(done)](boost::system::error_code error, std::size_t) {
                          if (error) return done(self->failure(error, "reading the answer of"));
                          done(std::nullopt);
                        });
}

void Hop::read_all(Done done) {
  read_some([self = shared_from_this(), done = std::move(done)](std::optional<HopFailure> failed) mutable {
    if (failed || self->parser_.is_done()) return done(std::move(failed));
    self->read_all(std::move(done));
  });
}

void Hop::cancel() {
  boost::system::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}

std::optional<std::string> Hop::field(std::string_view name) const {
  const auto& head = parser_.get();
  const auto found = head.find(beast::string_view(name.data(), name.size()));
  if (found == head.end()) return std::nullopt;
  return std::string(found->value());
}

std::string Hop::take_body() {
  std::string taken;
  taken.swap(parser_.get().body());
  return taken;
}

}  // namespace jsonl_perf::serve
