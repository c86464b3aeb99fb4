// The Anthropic Messages API (`POST /v1/messages`) as the reference serves it: a request
// is checked by a permissive model (fields it does not declare are allowed), converted
// to a chat completion request, answered by the chat path, and the chat answer converted
// back: a whole body to a message, a stream's chunks to Anthropic's events. Both
// directions live here, so that the server and the proxy convert alike.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sse.hpp"

namespace jsonl_perf::serve::anthropic {

// A request the conversion refuses (a tool the chat path cannot run, a thinking budget
// out of range, ...): 400 with an invalid_request_error.
class RequestError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A chat answer that cannot be converted (a tool call whose arguments are not a JSON
// object, a stream chunk that is not JSON): 500 with an api_error.
class ResponseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The validation errors of a Messages body ([{"loc", "type", "msg"}], empty when valid):
// `model`, `messages` and `max_tokens` required, each declared field of its kind.
boost::json::array validate_messages(const boost::json::value& body);
// Of a count_tokens body: as a Messages body, without `max_tokens`.
boost::json::array validate_count_tokens(const boost::json::value& body);

// The chat completion request a valid Messages body becomes: the system text and the
// leading system messages first, each content block as the chat path takes it,
// `max_tokens` as `max_completion_tokens`, `stop_sequences` as `stop`, and a streamed
// request asking for its usage. Throws RequestError.
boost::json::object to_chat_request(const boost::json::object& body);
// The chat request whose prompt count_tokens measures (one token asked for).
boost::json::object count_tokens_chat_request(const boost::json::object& body);

// The message a whole chat answer becomes; never without a content block. Throws
// ResponseError.
boost::json::object to_message(const boost::json::object& chat_answer);

// Anthropic's usage of a chat usage block: input_tokens less the cached ones, which are
// cache_read_input_tokens when there are any.
boost::json::object to_usage(const boost::json::value* chat_usage);

// The body of an error in Anthropic's envelope: {"type":"error","error":{"type","message"}}.
std::string error_body(std::string_view type, std::string_view message);
// The error type of a chat-side status: invalid_request_error below 500, api_error from it.
std::string_view error_type_of(unsigned status);

// One Anthropic event: "event: <type>\ndata: <json>\n\n", `type` taken from the data.
std::string event_frame(const boost::json::object& data);

// Reframes a chat stream as Anthropic's events: message_start, then each content
// block's start, deltas and stop, then message_delta (the stop reason and the final
// usage) and message_stop; no ping. Fed the chat stream's bytes in any cuts.
class StreamReframer {
 public:
  explicit StreamReframer(std::string model);

  // The events the chat bytes complete; "[DONE]" ends the message. Throws ResponseError
  // for a chunk that is not a JSON object.
  std::string feed(std::string_view chat_bytes);
  // The end of a stream that stopped without "[DONE]": the message ends all the same.
  std::string finish();
  // A failure mid-stream: the open block closed, then an error event; no message_stop.
  std::string fail(std::string_view message);
  bool ended() const { return ended_; }

 private:
  std::string chunk(const boost::json::object& chunk);
  std::string start_message(std::optional<boost::json::object> usage);
  std::string open_block(boost::json::object block, std::string_view type);
  std::string close_block();

  std::string model_;
  std::string id_;
  sse::EventSplitter events_;
  bool started_ = false;
  bool ended_ = false;
  std::int64_t block_index_ = -1;
  std::optional<std::string> open_block_;  // the type of the block open now
  std::string stop_reason_ = "end_turn";
  boost::json::value stop_sequence_;
  std::optional<boost::json::object> usage_;
};

}  // namespace jsonl_perf::serve::anthropic
