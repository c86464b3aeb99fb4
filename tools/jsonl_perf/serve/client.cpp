#include "client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <ostream>
#include <random>
#include <stdexcept>

#include "library_names.hpp"
#include "sse.hpp"
#include "url.hpp"

namespace jsonl_perf::serve {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view words[] = {"explain", "the", "cache", "of", "a", "server", "in", "two", "lines",
                                      "caf\u00e9", "\u6a21\u578b", "please", "and", "why", "it", "matters"};


double ms_since(Clock::time_point start, Clock::time_point at = Clock::now()) {
  return std::chrono::duration<double, std::milli>(at - start).count();
}

std::string prompt(std::mt19937_64& random) {
  std::string text;
  const std::size_t count = std::uniform_int_distribution<std::size_t>(20, 400)(random);
  for (std::size_t i = 0; i < count; ++i) {
    if (i) text += ' ';
    text += words[random() % std::size(words)];
  }
  return text;
}

// Each route's request, asking for usage where the route makes it optional.
std::string body_for(const RequestResult& result, const ClientOptions& options, std::mt19937_64& random) {
  json::object body{{"model", "simulated-llm"}};
  switch (result.route) {
    case Route::chat_completions:
      body["messages"] = json::array{json::object{{"role", "user"}, {"content", prompt(random)}}};
      body["max_tokens"] = options.max_tokens;
      break;
    case Route::completions:
      body["prompt"] = prompt(random);
      body["max_tokens"] = options.max_tokens;
      break;
    case Route::responses:
      body["input"] = prompt(random);
      body["max_output_tokens"] = options.max_tokens;
      break;
    case Route::messages:  // Anthropic's: the usage always comes
      body["messages"] = json::array{json::object{{"role", "user"}, {"content", prompt(random)}}};
      body["max_tokens"] = options.max_tokens;
      break;
  }
  body["stream"] = result.stream;
  if (result.stream && (result.route == Route::chat_completions || result.route == Route::completions)) {
    body["stream_options"] = {{"include_usage", true}};
  }
  return json::serialize(body);
}


class Run;

// One request: connect, send, read the answer as it comes.
class ClientRequest : public std::enable_shared_from_this<ClientRequest> {
 public:
  ClientRequest(Run& run, RequestResult& result, std::string body);
  void begin();

 private:
  void connect();
  void send();
  void read_more();
  void done(std::string outcome);

  Run& run_;
  RequestResult& result_;
  tcp::socket socket_;
  net::steady_timer deadline_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response_parser<http::string_body> parser_;
  std::size_t scanned_ = 0;  // where the next unread event of a stream begins
  bool reused_ = false;  // on a kept-alive connection, which the server may have closed meanwhile
  bool done_ = false;
};

class Run {
 public:
  explicit Run(const ClientOptions& options) : options_(options), endpoint_(parse_url(options.url, "--url")), random_(options.seed) {}

  ClientReport go() {
    tcp::resolver resolver(context_);
    endpoints_ = resolver.resolve(endpoint_.host, endpoint_.port);
    const auto count = static_cast<std::size_t>(std::ceil(options_.rate * options_.duration));
    report_.requests.resize(count);
    start_ = Clock::now();
    schedule(0);
    context_.run();
    report_.seconds = ms_since(start_) / 1000;
    return std::move(report_);
  }

  Clock::time_point start() const { return start_; }
  net::io_context& context() { return context_; }
  const ClientOptions& options() const { return options_; }
  const tcp::resolver::results_type& endpoints() const { return endpoints_; }
  void finished() { --in_flight_; }

  // Connections kept alive between requests, as a load balancer keeps them.
  std::optional<tcp::socket> take_idle() {
    if (idle_.empty()) return std::nullopt;
    tcp::socket socket = std::move(idle_.back());
    idle_.pop_back();
    return socket;
  }
  void give_back(tcp::socket socket) { idle_.push_back(std::move(socket)); }

 private:
  void schedule(std::size_t index) {
    if (index == report_.requests.size()) return;
    auto timer = std::make_shared<net::steady_timer>(context_);
    timer->expires_at(start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(index / options_.rate)));
    timer->async_wait([this, index, timer](boost::system::error_code) {
      send(index);
      schedule(index + 1);
    });
  }

  void send(std::size_t index) {
    RequestResult& result = report_.requests[index];
    result.index = index;
    result.request_id = "cl-" + std::to_string(options_.seed) + "-" + std::to_string(index);
    result.route = options_.routes[index % options_.routes.size()];
    result.stream = std::uniform_real_distribution<double>(0, 1)(random_) < options_.stream_fraction;
    result.scheduled_ms = 1000.0 * index / options_.rate;
    result.sent_ms = ms_since(start_);
    if (in_flight_ >= options_.max_in_flight) {
      result.outcome = "unsent";
      return;
    }
    ++in_flight_;
    std::make_shared<ClientRequest>(*this, result, body_for(result, options_, random_))->begin();
  }

  const ClientOptions& options_;
  Endpoint endpoint_;
  net::io_context context_;
  tcp::resolver::results_type endpoints_;
  std::mt19937_64 random_;
  Clock::time_point start_;
  std::size_t in_flight_ = 0;
  std::vector<tcp::socket> idle_;
  ClientReport report_;
};

ClientRequest::ClientRequest(Run& run, RequestResult& result, std::string body)
    : run_(run), result_(result), socket_(run.context()), deadline_(run.context()) {
  request_.method(http::verb::post);
  request_.target(route_path(result.route));
  request_.version(11);
  request_.set(http::field::host, "jsonl-perf");
  request_.set(http::field::content_type, "application/json");
  request_.set(http::field::user_agent, "jsonl-perf-client");
  request_.set(http::field::authorization, "Bearer sk-not-a-real-key");
  request_.set("x-request-id", result.request_id);
  request_.set("x-session-id", "session-" + std::to_string(result.index % 8));
  request_.keep_alive(true);
  request_.body() = std::move(body);
  request_.prepare_payload();
  parser_.body_limit(std::uint64_t{64} << 20);
}

void ClientRequest::begin() {
  deadline_.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(run_.options().timeout)));
  deadline_.async_wait([self = shared_from_this()](boost::system::error_code error) {
    if (!error) self->done("timeout");
  });
  if (std::optional<tcp::socket> idle = run_.take_idle()) {
    socket_ = std::move(*idle);
    reused_ = true;
    return send();
  }
  connect();
}

void ClientRequest::connect() {
  net::async_connect(socket_, run_.endpoints(), [self = shared_from_this()](boost::system::error_code error, const tcp::endpoint&) {
    if (error) return self->done("connect_error");
    boost::system::error_code ignored;
    self->socket_.set_option(tcp::no_delay(true), ignored);
    self->send();
  });
}

void ClientRequest::send() {
  http::async_write(socket_, request_, [self = shared_from_this()](boost::system::error_code error, std::size_t) {
    const auto failed = [self](const char* outcome) {
      if (!self->reused_ || self->done_) return self->done(outcome);
      // The server closed the idle connection before this request: once more, on a new one.
      self->reused_ = false;
      boost::system::error_code ignored;
      self->socket_.close(ignored);
      self->socket_ = tcp::socket(self->run_.context());
      self->connect();
    };
    if (error) return failed("write_error");
    http::async_read_header(self->socket_, self->buffer_, self->parser_, [self, failed](boost::system::error_code error, std::size_t) {
      if (error) return failed("read_error");
      self->result_.http_status = self->parser_.get().result_int();
      self->read_more();
    });
  });
}

void ClientRequest::read_more() {
  if (done_) return;
  const std::string& body = parser_.get().body();
  if (result_.stream && result_.http_status == 200 && !result_.ttft_ms) {
    while (const std::optional<std::string_view> event = sse::next_event(body, scanned_)) {
      if (event_carries_token(result_.route, *event)) {
        result_.ttft_ms = ms_since(run_.start()) - result_.scheduled_ms;
        break;
      }
    }
  }
  if (parser_.is_done()) {
    if (result_.stream) {
      for_each_event(body, [&](const json::object& event) {
        result_.usage_found = result_.usage_found || carries_usage(result_.route, event);
      });
    } else if (result_.http_status == 200) {
      boost::system::error_code error;
      const json::value answer = json::parse(body, error);
      result_.usage_found = !error && answer.is_object() && carries_usage(result_.route, answer.get_object());
    }
    return done(result_.http_status == 200 ? "ok" : "http_error");
  }
  http::async_read_some(socket_, buffer_, parser_, [self = shared_from_this()](boost::system::error_code error, std::size_t) {
    if (error) return self->done("read_error");
    self->read_more();
  });
}

void ClientRequest::done(std::string outcome) {
  if (done_) return;
  done_ = true;
  const double now = ms_since(run_.start());
  result_.outcome = std::move(outcome);
  if (result_.outcome == "ok") {
    result_.e2e_ms = now - result_.scheduled_ms;
    result_.e2e_from_send_ms = now - result_.sent_ms;
  }
  deadline_.cancel();
  if (result_.outcome == "ok" && parser_.get().keep_alive()) {
    run_.give_back(std::move(socket_));
  } else {
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }
  run_.finished();
}

}  // namespace

ClientReport drive(const ClientOptions& options) {
  if (!(options.rate > 0) || !(options.duration > 0) || options.routes.empty()) {
    throw std::invalid_argument("client: a rate, a duration and a route are needed");
  }
  Run run(options);
  return run.go();
}

}  // namespace jsonl_perf::serve
