// A chat answer converted to Anthropic's: a whole body to a message, a stream's chunks to
// Anthropic's events, a failure to its error envelope.
#include <boost/json.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <string_view>

#include "anthropic.hpp"

namespace jsonl_perf::serve::anthropic {
namespace {

namespace json = boost::json;

std::string message_id() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string id = "msg_";
  for (int i = 0; i < 32; ++i) id += hex[random() & 15];
  return id;
}

const json::value* field(const json::object& object, std::string_view name) {
  const json::value* value = object.if_contains(name);
  return value && !value->is_null() ? value : nullptr;
}

std::string_view string_field(const json::object& object, std::string_view name) {
  const json::value* value = field(object, name);
  return value && value->is_string() ? std::string_view(value->get_string()) : std::string_view();
}

// The stop reason of a chat choice's finish, and the stop sequence it matched, if any.
std::pair<std::string, json::value> stop_of(const json::object& choice) {
  const std::string_view finish = string_field(choice, "finish_reason");
  const json::value* matched = field(choice, "stop_reason");
  if (finish == "stop" && matched && matched->is_string()) return {"stop_sequence", *matched};
  if (finish == "length") return {"max_tokens", nullptr};
  if (finish == "tool_calls") return {"tool_use", nullptr};
  return {"end_turn", nullptr};
}

std::string_view reasoning_of(const json::object& message) {
  const std::string_view content = string_field(message, "reasoning_content");
  return content.empty() ? string_field(message, "reasoning") : content;
}

json::object zero_usage() { return {{"input_tokens", 0}, {"output_tokens", 0}}; }

}  // namespace

json::object to_usage(const json::value* chat_usage) {
  if (!chat_usage || !chat_usage->is_object()) return zero_usage();
  const json::object& usage = chat_usage->get_object();
  std::int64_t cached = 0;
  if (const json::value* details = field(usage, "prompt_tokens_details"); details && details->is_object()) {
    if (const json::value* tokens = field(details->get_object(), "cached_tokens"); tokens && tokens->is_number()) {
      cached = tokens->to_number<std::int64_t>();
    }
  }
  const json::value* prompt = field(usage, "prompt_tokens");
  const json::value* completion = field(usage, "completion_tokens");
  json::object converted{
      {"input_tokens", std::max<std::int64_t>((prompt && prompt->is_number() ? prompt->to_number<std::int64_t>() : 0) - cached, 0)},
      {"output_tokens", completion && completion->is_number() ? completion->to_number<std::int64_t>() : 0}};
  if (cached > 0) converted["cache_read_input_tokens"] = cached;
  return converted;
}

json::object to_message(const json::object& chat_answer) {
  json::array content;
  std::pair<std::string, json::value> stop{"end_turn", nullptr};
  const json::value* choices = field(chat_answer, "choices");
  if (choices && choices->is_array() && !choices->get_array().empty() && choices->get_array()[0].is_object()) {
    const json::object& choice = choices->get_array()[0].get_object();
    const json::value* given = field(choice, "message");
    const json::object message = given && given->is_object() ? given->get_object() : json::object();
    if (const std::string_view reasoning = reasoning_of(message); !reasoning.empty()) {
      content.push_back(json::object{{"type", "thinking"}, {"thinking", reasoning}});
    }
    if (const std::string_view text = string_field(message, "content"); !text.empty()) {
      content.push_back(json::object{{"type", "text"}, {"text", text}});
    }
    if (const json::value* calls = field(message, "tool_calls"); calls && calls->is_array()) {
      for (const json::value& call : calls->get_array()) {
        const json::object* function = call.is_object() && field(call.get_object(), "function")
                                           ? call.at("function").if_object()
                                           : nullptr;
        const std::string_view name = function ? string_field(*function, "name") : std::string_view();
        boost::system::error_code error;
        const json::value input = json::parse(function ? string_field(*function, "arguments") : "", error);
        if (error || !input.is_object()) {
          throw ResponseError("Tool call '" + std::string(name) + "' arguments are not a valid JSON object");
        }
        content.push_back(json::object{
            {"type", "tool_use"}, {"id", string_field(call.get_object(), "id")}, {"name", name}, {"input", input}});
      }
    }
    stop = stop_of(choice);
  }
  if (content.empty()) content.push_back(json::object{{"type", "text"}, {"text", ""}});  // never without a block
  const json::value* model = field(chat_answer, "model");
  return {{"id", message_id()},
          {"type", "message"},
          {"role", "assistant"},
          {"model", model ? *model : json::value("")},
          {"content", std::move(content)},
          {"stop_reason", stop.first},
          {"stop_sequence", stop.second},
          {"usage", to_usage(field(chat_answer, "usage"))}};
}

std::string error_body(std::string_view type, std::string_view message) {
  return json::serialize(json::object{{"type", "error"}, {"error", {{"type", type}, {"message", message}}}});
}

std::string_view error_type_of(unsigned status) { return status < 500 ? "invalid_request_error" : "api_error"; }

std::string event_frame(const json::object& data) {
  return sse::frame(json::serialize(data), data.at("type").get_string());
}

StreamReframer::StreamReframer(std::string model) : model_(std::move(model)), id_(message_id()) {}

std::string StreamReframer::feed(std::string_view chat_bytes) {
  std::string frames;
  events_.feed(chat_bytes);
  while (!ended_) {
    const std::optional<std::string_view> event = events_.next();
    if (!event) break;
    const std::string_view data = sse::data_of(*event);
    if (data.empty()) continue;
    if (data == sse::done_data) {
      frames += finish();
      break;
    }
    boost::system::error_code error;
    const json::value chunk_value = json::parse(data, error);
    if (error || !chunk_value.is_object()) throw ResponseError("Malformed upstream stream chunk");
    frames += chunk(chunk_value.get_object());
  }
  return frames;
}

std::string StreamReframer::start_message(std::optional<json::object> usage) {
  if (started_) return {};
  started_ = true;
  // The stop reason and sequence come with message_delta.
  return event_frame({{"type", "message_start"},
                      {"message", {{"id", id_},
                                   {"type", "message"},
                                   {"role", "assistant"},
                                   {"model", model_},
                                   {"content", json::array()},
                                   {"usage", usage ? std::move(*usage) : zero_usage()}}}});
}

std::string StreamReframer::close_block() {
  if (!open_block_) return {};
  open_block_.reset();
  return event_frame({{"type", "content_block_stop"}, {"index", block_index_}});
}

std::string StreamReframer::open_block(json::object block, std::string_view type) {
  std::string frames = close_block();
  ++block_index_;
  open_block_ = std::string(type);
  return frames + event_frame({{"type", "content_block_start"}, {"index", block_index_}, {"content_block", std::move(block)}});
}

std::string StreamReframer::chunk(const json::object& chunk) {
  std::string frames;
  if (const json::value* usage = field(chunk, "usage"); usage && usage->is_object()) usage_ = to_usage(usage);
  if (!started_) {
    std::optional<json::object> opening;
    if (usage_) {  // the input side; what was produced comes with message_delta
      opening = json::object{{"input_tokens", usage_->at("input_tokens")}, {"output_tokens", 0}};
      if (const json::value* cached = usage_->if_contains("cache_read_input_tokens")) opening->emplace("cache_read_input_tokens", *cached);
    }
    frames += start_message(std::move(opening));
  }
  const json::value* choices = field(chunk, "choices");
  if (!choices || !choices->is_array()) return frames;
  for (const json::value& item : choices->get_array()) {
    if (!item.is_object()) continue;
    const json::object& choice = item.get_object();
    const json::value* delta_value = field(choice, "delta");
    const json::object delta = delta_value && delta_value->is_object() ? delta_value->get_object() : json::object();
    if (const std::string_view reasoning = reasoning_of(delta); !reasoning.empty()) {
      if (open_block_ != "thinking") frames += open_block({{"type", "thinking"}, {"thinking", ""}}, "thinking");
      frames += event_frame({{"type", "content_block_delta"}, {"index", block_index_},
                             {"delta", {{"type", "thinking_delta"}, {"thinking", reasoning}}}});
    }
    if (const std::string_view text = string_field(delta, "content"); !text.empty()) {
      if (open_block_ != "text") frames += open_block({{"type", "text"}, {"text", ""}}, "text");
      frames += event_frame({{"type", "content_block_delta"}, {"index", block_index_},
                             {"delta", {{"type", "text_delta"}, {"text", text}}}});
    }
    if (const json::value* calls = field(delta, "tool_calls"); calls && calls->is_array()) {
      for (const json::value& call : calls->get_array()) {
        const json::object* function = call.is_object() && field(call.get_object(), "function")
                                           ? call.at("function").if_object()
                                           : nullptr;
        if (!function) continue;
        if (const std::string_view name = string_field(*function, "name"); !name.empty()) {
          // A named fragment starts a call of its own: parallel calls never merge.
          const std::string_view id = string_field(call.get_object(), "id");
          frames += open_block({{"type", "tool_use"}, {"id", id.empty() ? message_id() : std::string(id)},
                                {"name", name}, {"input", json::object()}},
                               "tool_use");
        }
        if (const std::string_view arguments = string_field(*function, "arguments"); !arguments.empty() && open_block_ == "tool_use") {
          frames += event_frame({{"type", "content_block_delta"}, {"index", block_index_},
                                 {"delta", {{"type", "input_json_delta"}, {"partial_json", arguments}}}});
        }
      }
    }
    if (!string_field(choice, "finish_reason").empty()) std::tie(stop_reason_, stop_sequence_) = stop_of(choice);
  }
  return frames;
}

std::string StreamReframer::finish() {
  if (ended_) return {};
  std::string frames = close_block();
  frames += start_message(std::nullopt);  // a stream that carried no chunk
  json::object delta{{"stop_reason", stop_reason_}};
  if (!stop_sequence_.is_null()) delta.emplace("stop_sequence", stop_sequence_);
  frames += event_frame({{"type", "message_delta"}, {"delta", std::move(delta)}, {"usage", usage_ ? *usage_ : zero_usage()}});
  frames += event_frame({{"type", "message_stop"}});
  ended_ = true;
  return frames;
}

std::string StreamReframer::fail(std::string_view message) {
  if (ended_) return {};
  ended_ = true;
  std::string frames = close_block();
  return frames + event_frame({{"type", "error"}, {"error", {{"type", "api_error"}, {"message", message}}}});
}

}  // namespace jsonl_perf::serve::anthropic
