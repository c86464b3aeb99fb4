// The requests the OpenAI routes take: each body checked as the reference's request
// models check it (pydantic's errors: loc, type, msg), and the 400 answer's body.
#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <span>
#include <string_view>

#include "anthropic.hpp"
#include "openai.hpp"

namespace jsonl_perf::serve {
namespace {

namespace json = boost::json;

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
      errors.push_back(validation_error({"body", name}, "bool_type", "Input should be a valid boolean"));
    }
  }
}

void check_max_tokens(const json::object& body, std::string_view name, RequestShape& shape, json::array& errors) {
  const json::value* value = body.if_contains(name);
  if (!value || value->is_null()) return;
  if (!value->is_int64() && !value->is_uint64()) {
    errors.push_back(validation_error({"body", name}, "int_type", "Input should be a valid integer"));
  } else if (value->is_uint64() || value->get_int64() < 1) {
    errors.push_back(validation_error({"body", name}, value->is_uint64() ? "less_than_equal" : "greater_than_equal",
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
      errors.push_back(validation_error({"body", member.key()}, "extra_forbidden", "Extra inputs are not permitted"));
    }
  }
}

}  // namespace

json::object validation_error(json::array loc, std::string_view type, std::string_view msg) {
  return {{"loc", std::move(loc)}, {"type", type}, {"msg", msg}};
}

std::optional<Route> route_at(std::string_view path) {
  for (const Route route : every_route) {
    if (route_path(route) == path) return route;
  }
  return std::nullopt;
}

json::array validate(Route route, const json::value& body, RequestShape& shape) {
  if (route == Route::messages) {
    json::array errors = anthropic::validate_messages(body);
    if (!errors.empty()) return errors;
    try {
      return validate(Route::chat_completions, anthropic::to_chat_request(body.get_object()), shape);
    } catch (const anthropic::RequestError& error) {
      errors.push_back(validation_error({"body"}, "value_error", error.what()));
      return errors;
    }
  }
  json::array errors;
  const json::object* object = body.if_object();
  if (!object) {
    errors.push_back(validation_error({"body"}, "model_attributes_type",
                           "Input should be a valid dictionary or object to extract fields from"));
    return errors;
  }
  if (const json::value* model = object->if_contains("model"); !model) {
    errors.push_back(validation_error({"body", "model"}, "missing", "Field required"));
  } else if (!model->is_string()) {
    errors.push_back(validation_error({"body", "model"}, "string_type", "Input should be a valid string"));
  } else {
    shape.model = model->get_string();
  }
  const char* prompt_key = route == Route::chat_completions ? "messages" : route == Route::completions ? "prompt" : "input";
  if (const json::value* prompt = object->if_contains(prompt_key); !prompt) {
    errors.push_back(validation_error({"body", prompt_key}, "missing", "Field required"));
  } else if (route == Route::chat_completions && !prompt->is_array()) {
    errors.push_back(validation_error({"body", prompt_key}, "list_type", "Input should be a valid list"));
  } else if (!prompt->is_array() && !prompt->is_string()) {
    errors.push_back(validation_error({"body", prompt_key}, "string_type", "Input should be a valid string or list"));
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
      check_bool(*fields, "continuous_usage_stats", shape.continuous_usage, errors);
    } else {
      errors.push_back(validation_error({"body", "stream_options"}, "model_type", "Input should be a valid dictionary"));
    }
  }
  check_no_extra_fields(route, *object, errors);
  return errors;
}

json::array json_error(std::size_t offset, std::string_view what) {
  json::array errors;
  errors.push_back(validation_error({"body", offset}, "json_invalid", "JSON decode error: " + std::string(what)));
  return errors;
}

std::string bad_request_body(Route route, const json::array& errors) {
  std::string message;
  for (const json::value& entry : errors) {
    if (!message.empty()) message += "; ";
    // A conversion's refusal is said as the reference says it, without a place.
    if (route != Route::messages || entry.at("type") != "value_error") message += json::serialize(entry.at("loc")) + ": ";
    message += entry.at("msg").as_string();
  }
  if (route == Route::messages) return anthropic::error_body("invalid_request_error", message);
  return json::serialize(json::object{{"error", message}});
}

std::string failure_body(Route route, unsigned status, std::string_view message) {
  if (route == Route::messages) return anthropic::error_body(anthropic::error_type_of(status), message);
  return json::serialize(json::object{{"detail", message}});
}

}  // namespace jsonl_perf::serve
