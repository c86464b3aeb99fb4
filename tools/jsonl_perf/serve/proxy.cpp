#include <boost/asio/connect.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <ostream>
#include <stdexcept>

#include "library_names.hpp"
#include "proxy.hpp"
#include "url.hpp"

namespace jsonl_perf::serve {
namespace {

constexpr int clock_probes = 5;
constexpr double conclusive_delay = 0.005;  // a round trip this short ends the probing
constexpr double largest_delay = 0.010;     // beyond it, the estimate is worth less than 0
constexpr std::chrono::seconds clock_exchange_timeout{10};

Worker resolve(const std::string& url, std::string_view option, net::io_context& context) {
  const Endpoint endpoint = parse_url(url, option);
  boost::system::error_code error;
  auto endpoints = tcp::resolver(context).resolve(endpoint.host, endpoint.port, error);
  if (error) throw std::invalid_argument(std::string(option) + ": cannot resolve '" + url + "': " + error.message());
  return {endpoint.host + ":" + endpoint.port, std::move(endpoints)};
}

// One exchange with a worker (the clock handshake, before serving), bounded by
// `clock_exchange_timeout` whatever the worker does.
http::response<http::string_body> exchange(net::io_context& context, const Worker& worker, http::verb verb,
                                           std::string target, std::string body) {
  beast::tcp_stream stream(context);
  http::request<http::string_body> request(verb, target, 11);
  request.set(http::field::host, worker.name);
  request.set(http::field::content_type, "application/json");
  request.body() = std::move(body);
  request.prepare_payload();
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  boost::system::error_code failed;
  stream.expires_after(clock_exchange_timeout);
  stream.async_connect(worker.endpoints, [&](boost::system::error_code error, const tcp::endpoint&) {
    if ((failed = error)) return;
    http::async_write(stream, request, [&](boost::system::error_code error, std::size_t) {
      if ((failed = error)) return;
      http::async_read(stream, buffer, response, [&](boost::system::error_code error, std::size_t) { failed = error; });
    });
  });
  context.restart();
  context.run();
  if (failed) throw std::runtime_error(failed.message());
  return response;
}

}  // namespace

Upstreams::Upstreams(const ProxyOptions& options, net::io_context& context) : timeout_(options.hop_timeout) {
  if (options.ctx_urls.empty() || options.gen_urls.empty()) {
    throw std::invalid_argument("a proxy needs at least one --ctx-url and one --gen-url");
  }
  for (const std::string& url : options.ctx_urls) context_.push_back(resolve(url, "--ctx-url", context));
  for (const std::string& url : options.gen_urls) generation_.push_back(resolve(url, "--gen-url", context));
}

const Worker& Upstreams::next_context() { return context_[next_context_.fetch_add(1) % context_.size()]; }
const Worker& Upstreams::next_generation() { return generation_[next_generation_.fetch_add(1) % generation_.size()]; }

std::int64_t Upstreams::next_disagg_request_id() {
  const std::int64_t floor =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count()
      << 20;
  std::int64_t last = last_id_.load();
  std::int64_t next;
  do {
    next = std::max(last + 1, floor);
  } while (!last_id_.compare_exchange_weak(last, next));
  return next;
}

void Upstreams::align_clocks(std::ostream& log) {
  net::io_context context;
  for (const std::vector<Worker>* workers : {&context_, &generation_}) {
    for (const Worker& worker : *workers) {
      try {
        const auto probe = [&] {
          const double originate = jsonl::recording::steady_seconds();
          const auto response = exchange(context, worker, http::verb::get, "/steady_clock_offset", "");
          const double destination = jsonl::recording::steady_seconds();
          boost::system::error_code unreadable;
          const json::value stamps = json::parse(response.body(), unreadable);
          const json::object* fields = unreadable ? nullptr : stamps.if_object();
          const json::value* received = fields ? fields->if_contains("receive_ts") : nullptr;
          const json::value* sent = fields ? fields->if_contains("transmit_ts") : nullptr;
          if (response.result() != http::status::ok || !received || !received->is_number() || !sent ||
              !sent->is_number()) {
            throw std::runtime_error("its answer to GET /steady_clock_offset is not "
                                     "{\"receive_ts\": seconds, \"transmit_ts\": seconds}");
          }
          const double receive = received->to_number<double>();
          const double transmit = sent->to_number<double>();
          return std::pair{(destination - originate) - (transmit - receive),
                           ((receive - originate) + (transmit - destination)) / 2};
        };
        probe();  // connection setup costs the first round trip's outbound leg only
        auto best = probe();
        for (int i = 1; i < clock_probes && best.first > conclusive_delay; ++i) best = std::min(best, probe());
        // Too slow a round trip: its times stay on its own clock (an offset an earlier
        // proxy set is taken back).
        const bool conclusive = best.first <= largest_delay;
        exchange(context, worker, http::verb::post, "/steady_clock_offset",
                 json::serialize(json::object{{"offset", conclusive ? -best.second : 0.0}}));
        if (!conclusive) {
          log << "jsonl-perf serve: clock handshake with " << worker.name << " too slow (" << best.first * 1e3
              << " ms round trip); its times stay on its own clock\n";
          continue;
        }
        log << "jsonl-perf serve: " << worker.name << " steady clock offset " << best.second << " s (round trip "
            << best.first * 1e3 << " ms)\n";
      } catch (const std::exception& error) {
        log << "jsonl-perf serve: cannot align the clock of " << worker.name << ": " << error.what() << '\n';
      }
    }
  }
}

}  // namespace jsonl_perf::serve
