// A configuration of one's own: a record type, its format, a route to a file per region,
// and a destination that is not a file (one end of a socket pair; the other end reads the
// lines back). Writes under DIR (default "configuration_out"); exit 0 when every line
// landed where its route and its sink put it.
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <system_error>

import jsonl.writer;

namespace {

// docs:begin format
struct Order {
  std::string region;
  int id = 0;
  double price = 0;
};

// One line per order. A price that is not a number is malformed: that record is dropped
// and counted, the others go on.
class OrderFormat : public jsonl::RecordFormat<Order> {
 public:
  bool append_line(Order& order, std::string& out) const override {
    bool sanitized = false;
    {  // the stream writes ahead of out's size and settles it when it goes
      jsonl::JsonTextStream json(out);
      json.begin_object();
      json.key("id");
      json.integer(order.id);
      json.key("price");
      json.floating(order.price);  // NaN or infinity: throws jsonl::MalformedRecord
      json.end_object();
      sanitized = json.sanitized();
    }
    out += '\n';
    return sanitized;
  }
};

// orders-<region>.jsonl in the writer's directory.
class OrderRoute : public jsonl::RecordRoute<Order> {
 public:
  explicit OrderRoute(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path route(const Order& order) const override { return dir_ / ("orders-" + order.region + ".jsonl"); }

 private:
  std::filesystem::path dir_;
};
// docs:end format

// docs:begin socket
class SocketSink : public jsonl::Sink {
 public:
  explicit SocketSink(int fd) : fd_(fd) {}
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    std::size_t sent = 0;
    while (sent < append.bytes.size()) {
      const ssize_t n = ::send(fd_, append.bytes.data() + sent, append.bytes.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
      } else if (n < 0 && errno != EINTR) {
        // Nothing sent: a write error, the append's records dropped and counted.
        if (sent == 0) throw std::system_error(errno, std::generic_category(), "send");
        // Part of it sent: say how much landed.
        outcome.error = std::error_code(errno, std::generic_category()).message();
        outcome.landed = sent;
        return;
      }
    }
  }

 private:
  int fd_;
};
// docs:end socket

bool routed(const std::filesystem::path& dir) {
  // docs:begin routed
  jsonl::WriterOptions options{.output_dir = dir, .subject = "orders"};
  jsonl::JsonlRecordWriter<Order> writer(options, std::make_shared<OrderFormat>(),
                                         /*sink=*/nullptr, std::make_shared<OrderRoute>(dir));
  writer.start();
  writer.submit(Order{.region = "eu", .id = 1, .price = 9.5});
  writer.submit(Order{.region = "us", .id = 2, .price = 12.25});
  writer.submit(Order{.region = "eu", .id = 3, .price = std::numeric_limits<double>::quiet_NaN()});
  writer.close();  // orders-eu.jsonl holds order 1, orders-us.jsonl order 2; order 3 is malformed
  // docs:end routed
  std::ifstream eu(dir / "orders-eu.jsonl");
  std::string line;
  const bool eu_holds_one = std::getline(eu, line) && line == R"({"id":1,"price":9.5})" && !std::getline(eu, line);
  const jsonl::WriterStats stats = writer.stats();
  return eu_holds_one && stats.written == 2 && stats.dropped(jsonl::DropReason::malformed) == 1;
}

bool to_a_socket() {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0) return false;
  {
    // docs:begin socket_writer
    jsonl::JsonlRecordWriter<> writer({.output_dir = std::nullopt, .subject = "orders"},
                                      std::make_shared<jsonl::JsonLineFormat>(), std::make_shared<SocketSink>(ends[0]));
    // docs:end socket_writer
    writer.start();
    writer.submit(boost::json::object{{"id", 4}});
    writer.close();
    if (writer.stats().written != 1) return false;
  }
  ::close(ends[0]);
  std::string received;
  char buffer[256];
  for (ssize_t n; (n = ::read(ends[1], buffer, sizeof buffer)) > 0;) received.append(buffer, static_cast<std::size_t>(n));
  ::close(ends[1]);
  return received == "{\"id\":4}\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path root = argc > 1 ? argv[1] : "configuration_out";
  std::filesystem::create_directories(root);
  const bool ok = routed(root) && to_a_socket();
  std::cout << (ok ? "configuration: every line where its route and sink put it\n" : "configuration: FAILED\n");
  return ok ? 0 : 1;
}
