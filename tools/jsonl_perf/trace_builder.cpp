module;

#include <boost/json.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sse.hpp"

module jsonl_perf.trace_builder;

namespace jsonl_perf {
namespace {

namespace json = boost::json;
using jsonl::recording::Outcome;
using jsonl::recording::RequestLine;
using jsonl::recording::ResponseLine;
using jsonl::recording::Termination;
using jsonl::recording::TraceLine;

constexpr std::array<std::string_view, 6> prompts{
    "Summarize this paragraph in one sentence, please.",
    "Traduis en fran\u00e7ais : \u00ab le caf\u00e9 est pr\u00eat \u00bb.",
    "\u4eca\u65e5\u306e\u5929\u6c17\u3092\u6559\u3048\u3066\u304f\u3060\u3055\u3044\u3002",
    "\u00bfCu\u00e1l es la capital de Espa\u00f1a? Responde brevemente.",
    "\u041e\u0431\u044a\u044f\u0441\u043d\u0438, \u043a\u0430\u043a \u0440\u0430\u0431\u043e\u0442\u0430\u0435\u0442 "
    "\u043a\u044d\u0448.",
    "Write a haiku about GPUs \U0001F680 and caches."};
constexpr std::array<std::string_view, 6> answers{
    "The paragraph argues that batching amortizes the cost of each step.",
    "\u00ab Le caf\u00e9 est pr\u00eat. \u00bb",
    "\u4eca\u65e5\u306f\u6674\u308c\u3067\u3059\u3002",
    "Madrid.",
    "\u041a\u044d\u0448 \u0445\u0440\u0430\u043d\u0438\u0442 \u0447\u0430\u0441\u0442\u043e "
    "\u043d\u0443\u0436\u043d\u044b\u0435 \u0434\u0430\u043d\u043d\u044b\u0435.",
    "Silicon rivers / tensors cascade through the night / cache lines hum softly"};
constexpr std::array<std::string_view, 4> sessions{"conv-1f3a", "  user 42/chat ", "", "caf\u00e9-session"};

// The answer streamed as OpenAI-style chat.completion.chunk events, a word a frame.
std::string sse_frames(std::string_view id, std::string_view answer, bool cut) {
  std::string text;
  std::size_t begin = 0;
  int frame = 0;
  while (begin < answer.size()) {
    std::size_t end = answer.find(' ', begin);
    end = end == std::string_view::npos ? answer.size() : end + 1;
    const json::value chunk = {{"id", id},
                               {"object", "chat.completion.chunk"},
                               {"choices", json::array{json::object{{"index", 0},
                                                                    {"delta", {{"content", answer.substr(begin, end - begin)}}}}}}};
    text += jsonl_perf::sse::frame(jsonl::to_json_text(chunk, {.ensure_ascii = false}));
    begin = end;
    if (cut && ++frame == 2) return text;  // the client hung up mid-answer
  }
  return text + jsonl_perf::sse::frame(jsonl_perf::sse::done_data);
}

}  // namespace

TraceBuilder::TraceBuilder(std::uint64_t seed, std::uint64_t stream)
    : random_(seed * 0x9E3779B97F4A7C15ull + stream), stream_(stream) {}

std::size_t TraceBuilder::pick(std::size_t count) { return random_() % count; }

jsonl::TraceRecord<TraceLine> TraceBuilder::next(double server_arrival_time) {
  return pending_ ? response() : request(server_arrival_time);
}

jsonl::TraceRecord<TraceLine> TraceBuilder::request(double server_arrival_time) {
  jsonl::recording::Headers headers{{"host", "localhost:8000"},
                                    {"content-type", "application/json"},
                                    {"x-forwarded-for", "10.1.0." + std::to_string(pick(250))},
                                    {"x-forwarded-for", "10.2.0." + std::to_string(pick(250))},
                                    {"user-agent", "OpenAI/Python 1.51.0"},
                                    {"x-session-id", std::string(sessions[pick(sessions.size())])}};
  const std::size_t answer = pick(answers.size());
  json::value body = {{"model", "llama-3.1-8b-instruct"},
                      {"stream", true},
                      {"max_tokens", 64 + pick(512)},
                      {"messages", json::array{json::object{{"role", "system"}, {"content", "You are a helpful assistant."}},
                                               json::object{{"role", "user"}, {"content", prompts[answer]}}}}};
  std::string session = jsonl::recording::session_of(headers, body);
  pending_ = Pending{jsonl::make_trace_id(), session, std::int64_t(stream_ * 1'000'000'000ull + ++sequence_), answer};
  return jsonl::recording::trace_record(RequestLine{.trace_id = pending_->trace_id,
                                                    .session = std::move(session),
                                                    .recorded_at = std::chrono::system_clock::now(),
                                                    .server_arrival_time = server_arrival_time,
                                                    .route = "/v1/chat/completions",
                                                    .status = "accepted",
                                                    .headers = std::move(headers),
                                                    .body = json::serialize(body)});
}

// As an aggregated server records it by default: the engine's id as client_id and
// disagg_request_id, and a hang-up's termination.
jsonl::TraceRecord<TraceLine> TraceBuilder::response() {
  Pending request = std::move(*pending_);
  pending_.reset();
  const bool hung_up = pick(50) == 0;
  std::string frames = sse_frames("chatcmpl-" + request.trace_id.substr(3), answers[request.answer], hung_up);
  return jsonl::recording::trace_record(ResponseLine{
      .trace_id = std::move(request.trace_id),
      .session = std::move(request.session),
      .finished_at = std::chrono::system_clock::now(),
      .status = hung_up ? Outcome::client_disconnected : Outcome::completed,
      .client_id = request.client_id,
      .disagg_request_id = request.client_id,
      .ctx_request_id = nullptr,
      .termination = hung_up ? std::optional(Termination{"client_disconnected", "write failed"}) : std::nullopt,
      .frames = std::move(frames)});
}

}  // namespace jsonl_perf
