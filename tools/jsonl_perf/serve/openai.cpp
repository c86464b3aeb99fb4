#include "openai.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <random>
#include <span>
#include <string_view>

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

json::object error(json::array loc, std::string_view type, std::string_view msg) {
  return {{"loc", std::move(loc)}, {"type", type}, {"msg", msg}};
}

// The bytes of text a prompt holds: a string, or parts ({"text": ...}) or strings in an array.
std::size_t text_bytes(const json::value& value) {
  if (const json::string* text = value.if_string()) return text->size();
  std::size_t bytes = 0;
  if (const json::array* items = value.if_array()) {
    for (const json::value& item : *items) {
      if (item.is_string()) {
        bytes += item.get_string().size();
      } else if (const json::object* part = item.if_object()) {
        for (const char* key : {"text", "content"}) {
          if (const json::value* inner = part->if_contains(key)) bytes += text_bytes(*inner);
        }
      }
    }
  }
  return bytes;
}

// The field `name` of a valid body, checked to be of its kind.
void check_bool(const json::object& body, std::string_view name, bool& out, json::array& errors) {
  if (const json::value* value = body.if_contains(name)) {
    if (value->is_bool()) {
      out = value->get_bool();
    } else if (!value->is_null()) {
      errors.push_back(error({"body", name}, "bool_type", "Input should be a valid boolean"));
    }
  }
}

void check_max_tokens(const json::object& body, std::string_view name, RequestShape& shape, json::array& errors) {
  const json::value* value = body.if_contains(name);
  if (!value || value->is_null()) return;
  if (!value->is_int64() && !value->is_uint64()) {
    errors.push_back(error({"body", name}, "int_type", "Input should be a valid integer"));
  } else if (value->is_uint64() || value->get_int64() < 1) {
    errors.push_back(error({"body", name}, value->is_uint64() ? "less_than_equal" : "greater_than_equal",
                           value->is_uint64() ? "Input should be a 64-bit integer" : "Input should be greater than or equal to 1"));
  } else {
    shape.max_tokens = value->get_int64();
  }
}

// The top-level fields the reference's request models declare (max_tokens is the chat
// model's alias of max_completion_tokens). Both forbid any other; the responses model
// allows extras.
constexpr std::array<std::string_view, 42> completion_fields{
    "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
    "presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p", "user",
    "lora_request", "prompt_ignore_length", "use_beam_search", "top_k", "top_p_min", "min_p", "repetition_penalty",
    "length_penalty", "early_stopping", "stop_token_ids", "include_stop_str_in_output", "ignore_eos", "min_tokens",
    "skip_special_tokens", "spaces_between_special_tokens", "truncate_prompt_tokens", "return_context_logits",
    "detokenize", "thinking_token_budget", "add_special_tokens", "response_format", "disaggregated_params", "priority",
    "conversation_params"};
constexpr std::array<std::string_view, 58> chat_completion_fields{
    "messages", "prompt_token_ids", "prompt_token_ids_b64", "model", "frequency_penalty", "logit_bias", "logprobs",
    "top_logprobs", "max_completion_tokens", "max_tokens", "n", "presence_penalty", "response_format", "seed", "stop",
    "stream", "stream_options", "temperature", "top_p", "tools", "tool_choice", "parallel_tool_calls",
    "client_metadata", "service_tier", "user", "reasoning_effort", "thinking", "thinking_token_budget",
    "prompt_ignore_length", "best_of", "use_beam_search", "top_k", "top_p_min", "min_p", "repetition_penalty",
    "length_penalty", "early_stopping", "stop_token_ids", "include_stop_str_in_output", "ignore_eos", "min_tokens",
    "skip_special_tokens", "spaces_between_special_tokens", "truncate_prompt_tokens", "lora_request", "echo",
    "add_generation_prompt", "add_special_tokens", "documents", "chat_template", "chat_template_kwargs",
    "media_io_kwargs", "disaggregated_params", "conversation_params", "cache_salt", "priority", "agent_hierarchy",
    "mm_processor_kwargs"};

// An extra_forbidden error for each top-level field the route's model does not declare.
void check_no_extra_fields(Route route, const json::object& body, json::array& errors) {
  if (route == Route::responses) return;
  const std::span<const std::string_view> declared =
      route == Route::chat_completions ? std::span<const std::string_view>(chat_completion_fields)
                                       : std::span<const std::string_view>(completion_fields);
  for (const auto& member : body) {
    if (std::ranges::find(declared, std::string_view(member.key())) == declared.end()) {
      errors.push_back(error({"body", member.key()}, "extra_forbidden", "Extra inputs are not permitted"));
    }
  }
}

}  // namespace

std::optional<Route> route_at(std::string_view path) {
  for (const Route route : every_route) {
    if (route_path(route) == path) return route;
  }
  return std::nullopt;
}

json::array validate(Route route, const json::value& body, RequestShape& shape) {
  json::array errors;
  const json::object* object = body.if_object();
  if (!object) {
    errors.push_back(error({"body"}, "model_attributes_type",
                           "Input should be a valid dictionary or object to extract fields from"));
    return errors;
  }
  if (const json::value* model = object->if_contains("model"); !model) {
    errors.push_back(error({"body", "model"}, "missing", "Field required"));
  } else if (!model->is_string()) {
    errors.push_back(error({"body", "model"}, "string_type", "Input should be a valid string"));
  } else {
    shape.model = model->get_string();
  }
  const char* prompt_key = route == Route::chat_completions ? "messages" : route == Route::completions ? "prompt" : "input";
  if (const json::value* prompt = object->if_contains(prompt_key); !prompt) {
    errors.push_back(error({"body", prompt_key}, "missing", "Field required"));
  } else if (route == Route::chat_completions && !prompt->is_array()) {
    errors.push_back(error({"body", prompt_key}, "list_type", "Input should be a valid list"));
  } else if (!prompt->is_array() && !prompt->is_string()) {
    errors.push_back(error({"body", prompt_key}, "string_type", "Input should be a valid string or list"));
  } else {
    shape.prompt_bytes = text_bytes(*prompt);
  }
  check_bool(*object, "stream", shape.stream, errors);
  for (const char* name : {"max_tokens", "max_completion_tokens", "max_output_tokens"}) {
    check_max_tokens(*object, name, shape, errors);
  }
  if (const json::value* options = object->if_contains("stream_options"); options && !options->is_null()) {
    if (const json::object* fields = options->if_object()) {
      shape.include_usage = true;  // the field's default, once stream_options is given
      shape.stream_options_given = true;
      check_bool(*fields, "include_usage", shape.include_usage, errors);
    } else {
      errors.push_back(error({"body", "stream_options"}, "model_type", "Input should be a valid dictionary"));
    }
  }
  check_no_extra_fields(route, *object, errors);
  return errors;
}

json::array json_error(std::size_t offset, std::string_view what) {
  json::array errors;
  errors.push_back(error({"body", offset}, "json_invalid", "JSON decode error: " + std::string(what)));
  return errors;
}

std::string bad_request_body(const json::array& errors) {
  std::string message;
  for (const json::value& entry : errors) {
    if (!message.empty()) message += "; ";
    message += json::serialize(entry.at("loc")) + ": " + std::string(entry.at("msg").as_string());
  }
  return json::serialize(json::object{{"error", message}});
}

Answer::Answer(Route route, std::string model, std::int64_t prompt_tokens, std::int64_t cached_tokens,
               bool include_usage)
    : route_(route),
      model_(std::move(model)),
      id_((route == Route::chat_completions ? "chatcmpl-" : route == Route::completions ? "cmpl-" : "resp_") +
          random_hex(32)),
      item_id_("msg_" + random_hex(32)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      prompt_tokens_(prompt_tokens),
      cached_tokens_(cached_tokens),
      include_usage_(include_usage || route == Route::responses) {}

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
  switch (route_) {
    case Route::chat_completions:
      return sse::frame(json::serialize(chunk({{"delta", {{"role", "assistant"}, {"content", ""}}}, {"finish_reason", nullptr}})));
    case Route::completions:
      return {};
    case Route::responses:
      return event("response.created", {{"response", response_object("in_progress")}}) +
             event("response.in_progress", {{"response", response_object("in_progress")}}) +
             event("response.output_item.added", {{"output_index", 0}, {"item", message_item("in_progress")}}) +
             event("response.content_part.added",
                   {{"item_id", item_id_}, {"output_index", 0}, {"content_index", 0},
                    {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
  }
  return {};
}

void Answer::add_token(std::string_view token) {
  text_ += token;
  ++completion_tokens_;
}

std::string Answer::stream_token(std::string_view token) {
  add_token(token);
  switch (route_) {
    case Route::chat_completions:
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
  if (route_ == Route::responses) {
    return event("response.output_text.done",
                 {{"item_id", item_id_}, {"output_index", 0}, {"content_index", 0}, {"text", text_}}) +
           event("response.content_part.done",
                 {{"item_id", item_id_}, {"output_index", 0}, {"content_index", 0},
                  {"part", {{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}}}}) +
           event("response.output_item.done", {{"output_index", 0}, {"item", message_item("completed")}}) +
           event("response.completed", {{"response", response_object("completed")}});
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
  switch (route_) {
    case Route::chat_completions:
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
  const std::string_view marker = route == Route::chat_completions ? R"("delta":{"content":")" : R"("text":")";
  const std::size_t at = event.find(marker);
  return at != std::string_view::npos && at + marker.size() < event.size() && event[at + marker.size()] != '"';
}

bool carries_usage(Route route, const json::object& body) {
  if (route == Route::responses) {
    const json::value* response = body.if_contains("response");
    if (response && response->is_object()) return carries_usage(route, response->get_object());
  }
  const json::value* usage = body.if_contains("usage");
  return usage && usage->is_object();
}

}  // namespace jsonl_perf::serve
