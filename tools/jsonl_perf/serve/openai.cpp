#include "openai.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <random>
#include <span>
#include <string_view>

#include "anthropic.hpp"
#include "sse.hpp"

namespace jsonl_perf::serve {
namespace {

namespace json = boost::json;

std::string random_hex(std::size_t digits) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string text(digits, '0');
  for (char& c : text) c = hex[random() & 15];
  return text;
}

}  // namespace

// A Messages answer is a chat answer underneath: route_ is the chat route, and what it
// writes goes through the reframer.
Answer::Answer(Route route, std::string model, std::int64_t prompt_tokens, std::int64_t cached_tokens,
               bool include_usage, bool continuous_usage)
    : route_(route == Route::messages ? Route::chat_completions : route),
      continuous_usage_(continuous_usage),
      reframer_(route == Route::messages ? std::make_unique<anthropic::StreamReframer>(model) : nullptr),
      model_(std::move(model)),
      id_((route_ == Route::chat_completions ? "chatcmpl-" : route_ == Route::completions ? "cmpl-" : "resp_") +
          random_hex(32)),
      item_id_("msg_" + random_hex(32)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      prompt_tokens_(prompt_tokens),
      cached_tokens_(cached_tokens),
      include_usage_(include_usage || route == Route::responses) {}

Answer::~Answer() = default;
Answer::Answer(Answer&&) noexcept = default;

json::value Answer::usage() const {
  const std::int64_t total = prompt_tokens_ + completion_tokens_;
  if (route_ == Route::responses) {
    return {{"input_tokens", prompt_tokens_},
            {"input_tokens_details", {{"cached_tokens", cached_tokens_}}},
            {"output_tokens", completion_tokens_},
            {"output_tokens_details", {{"reasoning_tokens", 0}}},
            {"total_tokens", total}};
  }
  return {{"prompt_tokens", prompt_tokens_},
          {"completion_tokens", completion_tokens_},
          {"total_tokens", total},
          {"prompt_tokens_details", {{"cached_tokens", cached_tokens_}}}};
}

json::object Answer::chunk(json::object choice) const {
  json::object chunk{{"id", id_},
                     {"object", route_ == Route::chat_completions ? "chat.completion.chunk" : "text_completion"},
                     {"created", created_},
                     {"model", model_}};
  json::object indexed{{"index", 0}};
  for (auto& field : choice) indexed.emplace(field.key(), std::move(field.value()));
  chunk.emplace("choices", json::array{std::move(indexed)});
  if (continuous_usage_) chunk.emplace("usage", usage());
  return chunk;
}

std::string Answer::event(std::string_view type, json::object data) {
  json::object event{{"type", type}, {"sequence_number", sequence_number_++}};
  for (auto& field : data) event.emplace(field.key(), std::move(field.value()));
  return sse::frame(json::serialize(event), type);
}

json::object Answer::message_item(std::string_view status) const {
  json::array content;
  if (status == "completed") {
    content.push_back(json::object{{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}});
  }
  return {{"type", "message"}, {"id", item_id_}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
}

json::object Answer::response_object(std::string_view status) const {
  json::object response{{"id", id_}, {"object", "response"}, {"created_at", created_}, {"status", status},
                        {"model", model_}};
  json::array output;
  if (status == "completed") output.push_back(message_item("completed"));
  response.emplace("output", std::move(output));
  response.emplace("usage", status == "completed" ? usage() : json::value(nullptr));
  return response;
}

std::string Answer::stream_opening() {
  if (reframer_) return reframer_->feed(chat_opening());
  return chat_opening();
}

std::string Answer::chat_opening() {
  switch (route_) {
    case Route::chat_completions:
    case Route::messages:  // made as chat
      return sse::frame(json::serialize(chunk({{"delta", {{"role", "assistant"}, {"content", ""}}}, {"finish_reason", nullptr}})));
    case Route::completions:
      return {};
    case Route::responses: {
      // One after another: each event takes the next sequence number, and the operands
      // of + are evaluated in no set order.
      std::string events = event("response.created", {{"response", response_object("in_progress")}});
      events += event("response.in_progress", {{"response", response_object("in_progress")}});
      events += event("response.output_item.added", {{"output_index", 0}, {"item", message_item("in_progress")}});
      events += event("response.content_part.added",
                      {{"item_id", item_id_}, {"output_index", 0}, {"content_index", 0},
                       {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
      return events;
    }
  }
  return {};
}

void Answer::add_token(std::string_view token) {
  text_ += token;
  ++completion_tokens_;
}

std::string Answer::stream_token(std::string_view token) {
  add_token(token);
  if (reframer_) return reframer_->feed(chat_token(token));
  return chat_token(token);
}

std::string Answer::chat_token(std::string_view token) {
  switch (route_) {
    case Route::chat_completions:
    case Route::messages:  // made as chat
      return sse::frame(json::serialize(chunk({{"delta", {{"content", token}}}, {"finish_reason", nullptr}})));
    case Route::completions:
      return sse::frame(json::serialize(chunk({{"text", token}, {"logprobs", nullptr}, {"finish_reason", nullptr}})));
    case Route::responses:
      return event("response.output_text.delta",
                   {{"item_id", item_id_}, {"output_index", 0}, {"content_index", 0}, {"delta", token}});
  }
  return {};
}

std::string Answer::stream_closing(std::string_view finish_reason) {
  if (reframer_) return reframer_->feed(chat_closing(finish_reason));
  return chat_closing(finish_reason);
}

std::string Answer::chat_closing(std::string_view finish_reason) {
  if (route_ == Route::responses) {  // one after another, as in the opening
    std::string events = event("response.output_text.done",
                               {{"item_id", item_id_}, {"output_index", 0}, {"content_index", 0}, {"text", text_}});
    events += event("response.content_part.done",
                    {{"item_id", item_id_}, {"output_index", 0}, {"content_index", 0},
                     {"part", {{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}}}});
    events += event("response.output_item.done", {{"output_index", 0}, {"item", message_item("completed")}});
    events += event("response.completed", {{"response", response_object("completed")}});
    return events;
  }
  json::object finish = route_ == Route::chat_completions
                            ? json::object{{"delta", json::object()}, {"finish_reason", finish_reason}}
                            : json::object{{"text", ""}, {"logprobs", nullptr}, {"finish_reason", finish_reason}};
  std::string text = sse::frame(json::serialize(chunk(std::move(finish))));
  if (include_usage_) {
    json::object usage_chunk = chunk({});
    usage_chunk["choices"] = json::array();
    usage_chunk.emplace("usage", usage());
    text += sse::frame(json::serialize(usage_chunk));
  }
  return text + sse::frame(sse::done_data);
}

json::value Answer::body(std::string_view finish_reason) const {
  if (reframer_) return anthropic::to_message(chat_body(finish_reason).get_object());
  return chat_body(finish_reason);
}

json::value Answer::chat_body(std::string_view finish_reason) const {
  switch (route_) {
    case Route::chat_completions:
    case Route::messages:  // made as chat
      return {{"id", id_},
              {"object", "chat.completion"},
              {"created", created_},
              {"model", model_},
              {"choices", json::array{json::object{{"index", 0},
                                                   {"message", {{"role", "assistant"}, {"content", text_}}},
                                                   {"finish_reason", finish_reason}}}},
              {"usage", usage()}};
    case Route::completions:
      return {{"id", id_},
              {"object", "text_completion"},
              {"created", created_},
              {"model", model_},
              {"choices", json::array{json::object{
                              {"index", 0}, {"text", text_}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}}},
              {"usage", usage()}};
    case Route::responses:
      return response_object("completed");
  }
  return nullptr;
}

void for_each_event(std::string_view text, const std::function<void(const json::object&)>& visit) {
  std::size_t from = 0;
  while (const std::optional<std::string_view> event = sse::next_event(text, from)) {
    const std::string_view data = sse::data_of(*event);
    if (data.empty() || data == sse::done_data) continue;
    boost::system::error_code error;
    const json::value value = json::parse(data, error);
    if (!error && value.is_object()) visit(value.get_object());
  }
}

bool event_carries_token(Route route, std::string_view event) {
  if (route == Route::responses) return event.starts_with("event: response.output_text.delta\n");
  if (route == Route::messages) {
    constexpr std::string_view marker = R"("type":"text_delta","text":")";
    const std::size_t at = event.find(marker);
    return at != std::string_view::npos && at + marker.size() < event.size() && event[at + marker.size()] != '"';
  }
  const std::string_view marker = route == Route::chat_completions ? R"("delta":{"content":")" : R"("text":")";
  const std::size_t at = event.find(marker);
  return at != std::string_view::npos && at + marker.size() < event.size() && event[at + marker.size()] != '"';
}

bool carries_usage(Route route, const json::object& body) {
  if (route == Route::messages) {  // a whole message's, or message_delta's
    const json::value* type = body.if_contains("type");
    const json::value* usage = body.if_contains("usage");
    return type && (*type == "message" || *type == "message_delta") && usage && usage->is_object();
  }
  if (route == Route::responses) {
    const json::value* response = body.if_contains("response");
    if (response && response->is_object()) return carries_usage(route, response->get_object());
  }
  const json::value* usage = body.if_contains("usage");
  return usage && usage->is_object();
}

}  // namespace jsonl_perf::serve
