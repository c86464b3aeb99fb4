// The routes that are not generation: health, metrics, the model list, the clock
// handshake and a Messages prompt's token count, each answered whole and never traced;
// and what the routes table does not take (404, 405).
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <utility>

#include "anthropic.hpp"
#include "library_names.hpp"
#include "handler.hpp"

namespace jsonl_perf::serve {
namespace {

constexpr const char* method_not_allowed = R"({"detail":"Method Not Allowed"})";

class ServiceRequest final : public RequestHandler {
 public:
  ServiceRequest(ServerContext& server, const RouteEntry* entry) : server_(server), entry_(entry) {}

  void answer(std::shared_ptr<Exchange> exchange) override {
    const http::verb method = exchange->request().method();
    if (!entry_) return exchange->respond(404, "application/json", R"({"detail":"Not Found"})");
    if (!(method == http::verb::get && entry_->get) && !(method == http::verb::post && entry_->post)) {
      return exchange->respond(405, "application/json", method_not_allowed);
    }
    switch (entry_->endpoint) {
      case Endpoint::health:
        return exchange->respond(200, "text/plain", "");
      case Endpoint::metrics:
        return exchange->respond(200, "text/plain; version=0.0.4", server_.metrics().text());
      case Endpoint::models: {
        const std::string& name = server_.model().options().model_name;
        return exchange->respond(200, "application/json",
                                 json::serialize(json::object{
                                     {"object", "list"},
                                     {"data", json::array{json::object{{"id", name}, {"object", "model"}, {"owned_by", "jsonl"}}}}}));
      }
      case Endpoint::steady_clock_offset:
        return answer_clock_probe(*exchange);
      case Endpoint::count_tokens:
        if (server_.upstreams()) return forward_count_tokens(std::move(exchange));
        return answer_count_tokens(*exchange);
      default:  // a generation route asked with GET
        return exchange->respond(405, "application/json", method_not_allowed);
    }
  }

  FailedAnswer failed(std::string_view) override {
    return {500, json::serialize(json::object{{"detail", "the server failed to answer"}})};
  }

 private:
  // GET: the two stamps of the reference's clock handshake, taken as the request is read
  // and as its answer goes out. POST {"offset": seconds}: what every later record adds.
  void answer_clock_probe(Exchange& exchange) {
    const double received = jsonl::recording::steady_seconds();
    const HttpRequest& request = exchange.request();
    if (request.method() == http::verb::post) {
      boost::system::error_code error;
      const json::value body = json::parse(request.body(), error);
      const json::value* offset = !error && body.is_object() ? body.get_object().if_contains("offset") : nullptr;
      if (!offset || !offset->is_number()) {
        return exchange.respond(400, "application/json", R"({"detail":"expected {\"offset\": seconds}"})");
      }
      server_.recorder().set_steady_clock_offset(offset->to_number<double>());
      return exchange.respond(200, "application/json", "");
    }
    const double transmitted = jsonl::recording::steady_seconds();
    exchange.respond(200, "application/json",
                     json::serialize(json::object{{"receive_ts", received}, {"transmit_ts", transmitted}}));
  }

  // {"input_tokens": N}: the tokens the Messages request's converted prompt holds;
  // refusals in Anthropic's envelope.
  void answer_count_tokens(Exchange& exchange) {
    boost::system::error_code error;
    const json::value body = json::parse(exchange.request().body(), error);
    if (error) {
      return exchange.respond(400, "application/json",
                              anthropic::error_body("invalid_request_error", "JSON decode error: " + error.message()));
    }
    json::array errors = anthropic::validate_count_tokens(body);
    RequestShape shape;
    if (errors.empty()) {
      try {
        errors = validate(Route::chat_completions, anthropic::count_tokens_chat_request(body.get_object()), shape);
      } catch (const anthropic::RequestError& refused) {
        errors.push_back(validation_error({"body"}, "value_error", refused.what()));
      }
    }
    if (!errors.empty()) return exchange.respond(400, "application/json", bad_request_body(Route::messages, errors));
    exchange.respond(200, "application/json",
                     json::serialize(json::object{{"input_tokens", SimulatedModel::prompt_tokens(shape.prompt_bytes)}}));
  }

  // A proxy's count is a context worker's: its answer relayed as it is; 503 in
  // Anthropic's envelope when no worker answers.
  void forward_count_tokens(std::shared_ptr<Exchange> exchange) {
    Upstreams& upstreams = *server_.upstreams();
    auto hop = std::make_shared<Hop>(exchange->executor(), upstreams.next_context(), upstreams.timeout());
    const auto unavailable = [](Exchange& exchange, const Hop& hop, const HopFailure& failure) {
      exchange.respond(503, "application/json",
                       anthropic::error_body("api_error", "no context worker counted the tokens: " + hop.worker() +
                                                              ": " + failure.detail));
    };
    Exchange& out = *exchange;
    hop->send("/v1/messages/count_tokens", out.request().body(),
              out.guard([exchange, hop, unavailable](std::optional<HopFailure> failed) {
                if (failed) return unavailable(*exchange, *hop, *failed);
                hop->read_all(exchange->guard([exchange, hop, unavailable](std::optional<HopFailure> failed) {
                  if (failed) return unavailable(*exchange, *hop, *failed);
                  exchange->respond(hop->status(), "application/json", hop->take_body());
                }));
              }));
  }

  ServerContext& server_;
  const RouteEntry* entry_;  // null: a path outside the table
};

}  // namespace

std::shared_ptr<RequestHandler> service_request(ServerContext& server, const RouteEntry* entry) {
  return std::make_shared<ServiceRequest>(server, entry);
}

}  // namespace jsonl_perf::serve
