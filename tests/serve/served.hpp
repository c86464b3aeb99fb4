// A `jsonl-perf serve` process for a test, and what a test does with it: requests over
// HTTP/1.1 (well-formed, or bytes as a hostile peer sends them), the server's /metrics,
// and after it stopped, the lines it recorded.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "serve/server_process.hpp"
#include "test_support.hpp"

namespace serve_test {

namespace net = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;
using tcp = net::ip::tcp;

class Served {
 public:
  // Records under its own scratch directory, or under `output_dir` (a restarted worker's).
  explicit Served(std::vector<std::string> extra = {}, std::optional<std::filesystem::path> output_dir = std::nullopt)
      : dir_(output_dir.value_or(scratch_.path())),
        process_(JSONL_PERF_TOOL, arguments(dir_, std::move(extra)), dir_ / ("server-" + scratch_.path().filename().string() + ".log")),
        log_(dir_ / ("server-" + scratch_.path().filename().string() + ".log")) {
    const std::string url = process_.url(std::chrono::seconds(30));
    const std::size_t colon = url.rfind(':');
    if (url.empty() || colon == std::string::npos) throw std::runtime_error("the server did not start: " + log());
    port_ = url.substr(colon + 1);
  }

  std::string url() const { return "http://127.0.0.1:" + port_; }
  const std::filesystem::path& dir() const { return dir_; }

  // A connected socket to the server.
  tcp::socket connect() {
    tcp::socket socket(context_);
    net::connect(socket, tcp::resolver(context_).resolve("127.0.0.1", port_));
    return socket;
  }

  http::response<http::string_body> request(http::verb verb, std::string target, std::string body = {},
                                            std::vector<std::pair<std::string, std::string>> headers = {}) {
    tcp::socket socket = connect();
    http::request<http::string_body> message(verb, target, 11);
    message.set(http::field::host, "127.0.0.1");
    message.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) message.set(name, value);
    message.body() = std::move(body);
    message.prepare_payload();
    http::write(socket, message);
    boost::beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::uint64_t{1} << 30);
    http::read(socket, buffer, parser);
    return parser.release();
  }

  http::response<http::string_body> post(std::string target, std::string body) {
    return request(http::verb::post, std::move(target), std::move(body));
  }

  // One sample of the server's /metrics, by its name and labels as written there.
  double metric(const std::string& sample) {
    const std::string text = request(http::verb::get, "/metrics").body();
    const std::size_t at = text.find("\n" + sample + " ");
    if (at == std::string::npos) throw std::runtime_error("no sample " + sample + " in /metrics");
    return std::stod(text.substr(at + sample.size() + 2));
  }

  // SIGTERM; the server's exit status.
  int stop() { return process_.stop(std::chrono::seconds(30)); }

  pid_t pid() const { return process_.pid(); }
  void signal(int number) const { ::kill(process_.pid(), number); }

  // The JSON lines of the trace files of `kind` ("requests", "responses"), or of the perf
  // files ("perf_metrics", or of one server kind: "perf_metrics-disagg"), after the server
  // stopped.
  std::vector<json::object> lines(const std::string& kind) const {
    std::vector<json::object> result;
    for (const std::string& line : raw_lines(kind)) result.push_back(json::parse(line).as_object());
    return result;
  }
  // The same lines as text.
  std::vector<std::string> raw_lines(const std::string& kind) const {
    std::vector<std::string> result;
    const std::filesystem::path root = dir_ / (kind.starts_with("perf_metrics") ? "perf_metrics" : "request_trace");
    if (!std::filesystem::exists(root)) return result;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      const std::string name = entry.path().filename().string();
      if (!entry.is_regular_file() || !name.starts_with(kind + "-") || !name.ends_with(".jsonl")) continue;
      std::ifstream input(entry.path(), std::ios::binary);
      for (std::string line; std::getline(input, line);) result.push_back(std::move(line));
    }
    return result;
  }

  std::string log() const { return jsonl_test::read_file(log_); }

 private:
  static std::vector<std::string> arguments(const std::filesystem::path& dir, std::vector<std::string> extra) {
    std::vector<std::string> result{"jsonl-perf", "serve", "--port", "0", "--output-dir", dir.string(),
                                    "--queue-ms", "const:0", "--ttft-ms", "const:1", "--itl-ms", "const:1"};
    result.insert(result.end(), extra.begin(), extra.end());
    return result;
  }

  jsonl_test::ScratchDirectory scratch_;
  std::filesystem::path dir_;
  jsonl_perf::serve::ServerProcess process_;
  std::filesystem::path log_;
  net::io_context context_;
  std::string port_;
};

// The body of a streamed chat request that asks for usage.
inline std::string chat_request(bool stream, int max_tokens = 4) {
  json::object body{{"model", "simulated-llm"},
                    {"messages", json::array{json::object{{"role", "user"}, {"content", "Say hello."}}}},
                    {"max_tokens", max_tokens},
                    {"stream", stream}};
  if (stream) body["stream_options"] = {{"include_usage", true}};
  return json::serialize(body);
}

inline std::string text_of(const json::value& value) { return std::string(value.as_string()); }

// The raw bytes of a request whose body is `body`, as a hostile or broken peer sends them
// (or as a test reads the answer as it comes).
inline std::string raw_post(const std::string& body) {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Reads until `text` holds `marker`.
inline void read_until(tcp::socket& socket, std::string& text, std::string_view marker) {
  char buffer[4096];
  while (text.find(marker) == std::string::npos) text.append(buffer, socket.read_some(net::buffer(buffer)));
}

// Reads until the peer closes; returns `text` and what came.
inline std::string read_to_close(tcp::socket& socket, std::string text = {}) {
  char buffer[4096];
  boost::system::error_code error;
  while (!error) text.append(buffer, socket.read_some(net::buffer(buffer), error));
  return text;
}

// Seconds on the steady clock the servers stamp their records with.
inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace serve_test
