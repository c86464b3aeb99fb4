// The generation routes `jsonl-perf serve` answers, each in its own dialect: the three
// OpenAI routes and Anthropic's Messages API (converted to and from chat, anthropic.hpp).
// What a request must hold (checked as the reference's request models check it, errors
// in their shape), and the bodies and server-sent events of its answer.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace jsonl_perf::serve {

namespace anthropic {
class StreamReframer;
}

enum class Route { chat_completions, completions, responses, messages };
inline constexpr std::array every_route{Route::chat_completions, Route::completions, Route::responses, Route::messages};

// The path of a route, and the route served at `path`, if any.
constexpr std::string_view route_path(Route route) {
  constexpr std::array<std::string_view, every_route.size()> paths{"/v1/chat/completions", "/v1/completions",
                                                                   "/v1/responses", "/v1/messages"};
  return paths[static_cast<std::size_t>(route)];
}
std::optional<Route> route_at(std::string_view path);

// What the server needs of a valid request body.
struct RequestShape {
  std::string model;
  bool stream = false;
  // A streamed chat or completion ends with a usage chunk when stream_options asks for
  // it; without stream_options, when the server traces requests (as the reference does,
  // so that the trace holds the usage).
  bool include_usage = false;
  bool stream_options_given = false;
  // Every chunk carries the usage so far (stream_options.continuous_usage_stats).
  bool continuous_usage = false;
  std::optional<std::int64_t> max_tokens;
  std::size_t prompt_bytes = 0;
};

// The validation errors of `body` for `route` ([{"loc": [...], "type": ..., "msg": ...}],
// empty when it is valid); `shape` is filled from a valid body. A Messages body is
// checked, converted to chat (a conversion it refuses is one error at ["body"]), and
// its shape is the chat request's.
boost::json::array validate(Route route, const boost::json::value& body, RequestShape& shape);

// One validation error in the reference's shape: {"loc": loc, "type": type, "msg": msg}.
boost::json::object validation_error(boost::json::array loc, std::string_view type, std::string_view msg);

// The error a body that is not JSON (or not UTF-8) gets, at byte `offset`.
boost::json::array json_error(std::size_t offset, std::string_view what);

// The 400 response's body for those errors, in the route's envelope.
std::string bad_request_body(Route route, const boost::json::array& errors);
// The body of an answer that failed with `status`, in the route's envelope.
std::string failure_body(Route route, unsigned status, std::string_view message);

// Reading an answer: the JSON data of each whole server-sent event of `text` ("[DONE]"
// and data that is not a JSON object skipped).
void for_each_event(std::string_view text, const std::function<void(const boost::json::object&)>& visit);
// Whether an event (or a body) of `route` carries the usage block (for /v1/responses,
// under "response" of response.completed; for /v1/messages, message_delta's).
bool carries_usage(Route route, const boost::json::object& event);
// Whether the text of one event of `route` (or, but for /v1/responses, of several)
// carries a token of text, read from the text (a load client's check, cheap enough for
// every event): a chat delta's or a completion's non-empty text, a Responses
// output_text delta, or a Messages text delta.
bool event_carries_token(Route route, std::string_view event);

// One answer as its route writes it, token by token.
class Answer {
 public:
  // A Messages answer is made as chat and converted as it goes (anthropic.hpp).
  Answer(Route route, std::string model, std::int64_t prompt_tokens, std::int64_t cached_tokens, bool include_usage,
         bool continuous_usage = false);
  ~Answer();
  Answer(Answer&&) noexcept;

  // Streaming: the events before the first token (may be empty), one a token, and the
  // events after the last (the finish, the usage, the end marker).
  std::string stream_opening();
  std::string stream_token(std::string_view token);
  std::string stream_closing(std::string_view finish_reason);
  // Not streaming: the whole body, once every token is in.
  boost::json::value body(std::string_view finish_reason) const;

  // Not streaming: a token joins the text without being sent.
  void add_token(std::string_view token);

 private:
  std::string chat_opening();
  std::string chat_token(std::string_view token);
  std::string chat_closing(std::string_view finish_reason);
  boost::json::value chat_body(std::string_view finish_reason) const;
  boost::json::value usage() const;
  boost::json::object chunk(boost::json::object choice) const;
  std::string event(std::string_view type, boost::json::object data);
  boost::json::object response_object(std::string_view status) const;
  boost::json::object message_item(std::string_view status) const;

  Route route_;
  bool continuous_usage_;
  // A Messages answer: the chat chunks reframed.
  std::unique_ptr<anthropic::StreamReframer> reframer_;
  std::string model_;
  std::string id_;
  std::string item_id_;
  std::int64_t created_;
  std::int64_t prompt_tokens_;
  std::int64_t cached_tokens_;
  bool include_usage_;
  std::string text_;
  std::int64_t completion_tokens_ = 0;
  std::int64_t sequence_number_ = 0;
};

}  // namespace jsonl_perf::serve
