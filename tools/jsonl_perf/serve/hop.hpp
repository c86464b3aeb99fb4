// One request from a disaggregated proxy to a worker, on a connection of its own: sent,
// its head read, then its body a piece at a time as the worker sends it. Every step is
// bounded by the hop's timeout (a worker that stops sending for that long has stopped
// answering), and a failure says what the client is answered with: 504 for a worker
// that timed out (connecting, or answering), 502 for one that refused, reset or closed
// the connection.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace jsonl_perf::serve {

struct HopFailure {
  unsigned status = 502;  // what the proxy answers with
  std::string cause;      // worker_timeout, worker_unreachable, worker_lost
  std::string detail;
};

// A worker as the proxy addresses it: "host:port" (how records name it) and where it is.
struct Worker {
  std::string name;
  boost::asio::ip::tcp::resolver::results_type endpoints;
};

class Hop : public std::enable_shared_from_this<Hop> {
 public:
  using Done = std::function<void(std::optional<HopFailure>)>;

  Hop(const boost::asio::any_io_executor& executor, const Worker& worker, std::chrono::milliseconds timeout);

  // POSTs `body` to `target`, asking for the worker's metrics; `done` once the head is in.
  void send(std::string target, std::string body, Done done);
  // Reads more of the body; `done` once some arrived or the body ended (body_done()).
  void read_some(Done done);
  // Reads the rest of the body.
  void read_all(Done done);
  // Ends the hop now: its pending step fails (a proxy that stops, or a client gone).
  void cancel();

  unsigned status() const { return parser_.get().result_int(); }
  // A field of the worker's head, if it sent it.
  std::optional<std::string> field(std::string_view name) const;
  bool body_done() const { return parser_.is_done(); }
  // The body's bytes that arrived since the last call.
  std::string take_body();
  const std::string& worker() const { return worker_.name; }

 private:
  HopFailure failure(const boost::system::error_code& error, std::string_view step) const;

  const Worker& worker_;
  std::chrono::milliseconds timeout_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  boost::beast::http::request<boost::beast::http::string_body> request_;
  boost::beast::http::response_parser<boost::beast::http::string_body> parser_;
  bool connected_ = false;
};

}  // namespace jsonl_perf::serve
