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

module jsonl_perf.trace_builder;

namespace jsonl_perf {
namespace {

namespace json = boost::json;

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
// datetime.now(timezone.utc).isoformat(): "2026-09-03T14:05:09.123456+00:00".
constexpr std::string_view python_isoformat = "%Y-%m-%dT%H:%M:%S.%f+00:00";
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
    text += "data: " + jsonl::to_json_text(chunk, {.ensure_ascii = false}) + "\n\n";
    begin = end;
    if (cut && ++frame == 2) return text;  // the client hung up mid-answer
  }
  return text + "data: [DONE]\n\n";
}

}  // namespace

TraceBuilder::TraceBuilder(std::uint64_t seed, std::uint64_t stream)
    : random_(seed * 0x9E3779B97F4A7C15ull + stream), stream_(stream) {}

std::size_t TraceBuilder::pick(std::size_t count) { return random_() % count; }

jsonl::TraceRecord<jsonl::ArenaRecord> TraceBuilder::next(double server_arrival_time) {
  return pending_ ? response() : request(server_arrival_time);
}

jsonl::TraceRecord<jsonl::ArenaRecord> TraceBuilder::request(double server_arrival_time) {
  const auto now = std::chrono::system_clock::now();
  pending_ = Pending{jsonl::make_trace_id(), jsonl::sanitize_session_key(sessions[pick(sessions.size())]),
                     stream_ * 1'000'000'000ull + ++sequence_, pick(answers.size())};
  const std::vector<std::pair<std::string, std::string>> headers{
      {"host", "localhost:8000"},
      {"content-type", "application/json"},
      {"x-forwarded-for", "10.1.0." + std::to_string(pick(250))},
      {"x-forwarded-for", "10.2.0." + std::to_string(pick(250))},
      {"user-agent", "OpenAI/Python 1.51.0"}};
  jsonl::ArenaRecord record = jsonl::ArenaRecord::make();
  const json::storage_ptr storage = record.storage();
  const std::size_t prompt = pending_->answer;
  record.value() = json::value(
      {{"event", "request"},
       {"trace_id", pending_->trace_id},
       {"session", pending_->session},
       {"recorded_at", jsonl::utc_text(now, python_isoformat)},
       {"server_arrival_time", server_arrival_time},
       {"route", "/v1/chat/completions"},
       {"status", "accepted"},
       {"headers", jsonl::headers_json(headers, storage)},
       {"body",
        {{"model", "llama-3.1-8b-instruct"},
         {"stream", true},
         {"max_tokens", 64 + pick(512)},
         {"messages", json::array{json::object{{"role", "system"}, {"content", "You are a helpful assistant."}},
                                  json::object{{"role", "user"}, {"content", prompts[prompt]}}}}}}},
      storage);
  return {std::string(jsonl::trace_requests), std::move(record), now};
}

jsonl::TraceRecord<jsonl::ArenaRecord> TraceBuilder::response() {
  const Pending request = std::move(*pending_);
  pending_.reset();
  const auto now = std::chrono::system_clock::now();
  const bool hung_up = pick(50) == 0;
  jsonl::ArenaRecord record = jsonl::ArenaRecord::make();
  record.value() = json::value(
      {{"event", "response"},
       {"trace_id", request.trace_id},
       {"session", request.session},
       {"finished_at", jsonl::utc_text(now, python_isoformat)},
       {"status", hung_up ? "client_disconnected" : "completed"},
       {"client_id", request.client_id},
       {"disagg_request_id", nullptr},
       {"ctx_request_id", nullptr},
       {"response",
        {{"kind", "sse_text"}, {"body", sse_frames("chatcmpl-" + request.trace_id.substr(3), answers[request.answer], hung_up)}}}},
      record.storage());
  return {std::string(jsonl::trace_responses), std::move(record), now};
}

}  // namespace jsonl_perf
