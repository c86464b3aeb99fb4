// One client connection of `jsonl-perf serve`: its I/O only. It reads requests within
// the limits and timeouts of ServeOptions, refuses what cannot be read, hands each
// request to its handler (handler.hpp) and writes what the handler answers through the
// request's Exchange. Every step of a handler runs inside the exception boundary here.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "handler.hpp"
#include "recording.hpp"

namespace jsonl_perf::serve {

// What the peer of a connection in a request did, seen without consuming a byte and
// without waiting: a readiness wake-up may come with nothing to read (a stale event when
// the reactor's threads race), and a wait there would hold the session's strand for good.
enum class PeerActivity { sent_more, hung_up, nothing };
PeerActivity peek_at_peer(boost::asio::ip::tcp::socket& socket);

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(boost::asio::ip::tcp::socket socket, ServerContext& server);
  ~Session();

  void start();
  // Called at a stop: an idle session closes at once; one in a request closes when `now`
  // is true (the drain timeout passed), its request ending as an error.
  void stop(bool now);

 private:
  friend class Exchange;

  void read_request();
  void on_header(boost::beast::error_code error);
  void on_body(boost::beast::error_code error);
  // Answers a request that cannot be read whole, counted by `reason`, and closes.
  void refuse(Refusal reason, unsigned status, std::string content_type, std::string body);
  // Runs `step` of the request numbered `number`, unless that request already ended; an
  // exception it throws ends that request (on_exception).
  void run_step(std::uint64_t number, const std::function<void()>& step);
  // The exception boundary: the request's handler records it; the client gets its status
  // whole, or, once part of the answer went out, the connection closes.
  void on_exception(std::string what);
  void end_request(bool close);
  void close_now();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  ServerContext& server_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<RequestHandler> handler_;  // the request's, from its head (or body) on
  std::shared_ptr<Exchange> exchange_;       // the request's I/O, once it is read whole
  std::uint64_t requests_ = 0;               // requests begun: the number of the current one
  bool in_request_ = false;
  bool closed_ = false;
  bool writing_ = false;     // a write of the answer is under way
  std::uint64_t watch_ = 0;  // the hang-up watch that may act; another's wait is stale
};

}  // namespace jsonl_perf::serve
