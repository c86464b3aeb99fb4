// A worker that answers every request with the same bytes, as a test sets them: for the
// faults a real worker does not make (an answer that is not JSON, a field missing or of
// the wrong kind, a body cut short). Listens on loopback on a port of its own and serves
// on a thread of its own until it goes; each connection gets the answer once the
// request's head and body are read, then is shut down.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

namespace serve_test {

class CannedWorker {
 public:
  explicit CannedWorker(std::string answer)
      : answer_(std::move(answer)),
        acceptor_(io_, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {
    accept_next();
    thread_ = std::jthread([this] { io_.run(); });
  }
  ~CannedWorker() { io_.stop(); }
  CannedWorker(const CannedWorker&) = delete;
  CannedWorker& operator=(const CannedWorker&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }
  // Requests answered so far, the proxy's clock handshake included.
  int answered() const { return answered_.load(); }

  // An HTTP answer with `body` as its JSON body, or cut short: declared longer than it is.
  static std::string json_answer(const std::string& body, bool cut = false) {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size() + (cut ? 100 : 0)) + "\r\nConnection: close\r\n\r\n" + body;
  }

 private:
  struct Exchange {
    explicit Exchange(boost::asio::ip::tcp::socket socket) : socket(std::move(socket)) {}
    boost::asio::ip::tcp::socket socket;
    std::string request;
  };

  void accept_next() {
    acceptor_.async_accept([this](boost::system::error_code error, boost::asio::ip::tcp::socket socket) {
      if (error) return;
      auto exchange = std::make_shared<Exchange>(std::move(socket));
      boost::asio::async_read_until(exchange->socket, boost::asio::dynamic_buffer(exchange->request), "\r\n\r\n",
                                    [this, exchange](boost::system::error_code error, std::size_t head) {
                                      if (!error) read_body(exchange, head);
                                    });
      accept_next();
    });
  }

  void read_body(const std::shared_ptr<Exchange>& exchange, std::size_t head) {
    const std::string_view header = "content-length: ";
    std::string lower = exchange->request.substr(0, head);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::size_t at = lower.find(header);
    const std::size_t length = at == std::string::npos ? 0 : std::strtoul(lower.c_str() + at + header.size(), nullptr, 10);
    const std::size_t have = exchange->request.size() - head;
    boost::asio::async_read(exchange->socket, boost::asio::dynamic_buffer(exchange->request),
                            boost::asio::transfer_exactly(length > have ? length - have : 0),
                            [this, exchange](boost::system::error_code error, std::size_t) {
                              if (error) return;
                              boost::asio::async_write(exchange->socket, boost::asio::buffer(answer_),
                                                       [this, exchange](boost::system::error_code, std::size_t) {
                                                         ++answered_;
                                                         boost::system::error_code ignored;
                                                         exchange->socket.shutdown(
                                                             boost::asio::ip::tcp::socket::shutdown_both, ignored);
                                                       });
                            });
  }

  const std::string answer_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<int> answered_{0};
  std::jthread thread_;  // last: it goes first, before what it serves with
};

}  // namespace serve_test
