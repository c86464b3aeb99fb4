// A valid Messages request converted to the chat completion request the chat path
// answers, as the reference's adapter converts it.
#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "anthropic.hpp"

namespace jsonl_perf::serve::anthropic {
namespace {

namespace json = boost::json;

// Claude Code's per-request billing block, first of the system blocks: no text the
// model should see.
bool is_billing_block(const std::string& text) {
  static const std::regex billing(
      R"(x-anthropic-billing-header:\s*cc_version=[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*;\s*cc_entrypoint=(?:cli|sdk-cli);\s*cch=[0-9a-f]{5};\s*)");
  return std::regex_match(text, billing);
}

std::string text_of(const json::value& value) { return value.is_string() ? std::string(value.get_string()) : std::string(); }

// Python's repr of a string as the reference's messages quote names: 'name'.
std::string quoted(const json::value* value) {
  return value && value->is_string() ? "'" + std::string(value->get_string()) + "'" : "None";
}

// json.dumps(value) with Python's default separators, ", " and ": ".
void python_dumps(const json::value& value, std::string& out) {
  if (const json::object* object = value.if_object()) {
    out += '{';
    bool first = true;
    for (const auto& member : *object) {
      if (!first) out += ", ";
      first = false;
      out += json::serialize(json::string(member.key()));
      out += ": ";
      python_dumps(member.value(), out);
    }
    out += '}';
  } else if (const json::array* array = value.if_array()) {
    out += '[';
    for (std::size_t i = 0; i < array->size(); ++i) {
      if (i) out += ", ";
      python_dumps((*array)[i], out);
    }
    out += ']';
  } else {
    out += json::serialize(value);
  }
}

std::string tool_result_text(const json::value* content) {
  if (!content || content->is_null()) return {};
  if (content->is_string()) return std::string(content->get_string());
  std::string text;
  bool first = true;
  for (const json::value& block : content->get_array()) {
    const json::value* type = block.get_object().if_contains("type");
    if (!type || type->get_string() != "text") {
      throw RequestError("Content block type " + quoted(type) + " inside tool_result is not supported");
    }
    if (!first) text += '\n';
    first = false;
    text += text_of(block.at("text"));
  }
  return text;
}

std::optional<json::object> image_part(const json::object& block) {
  const json::object& source = block.at("source").get_object();
  const std::string type = source.contains("type") ? text_of(source.at("type")) : "";
  const std::string url = source.contains("url") ? text_of(source.at("url")) : "";
  const std::string data = source.contains("data") ? text_of(source.at("data")) : "";
  if (type == "url" && !url.empty()) return json::object{{"type", "image_url"}, {"image_url", {{"url", url}}}};
  if (type == "base64" && !data.empty()) {
    std::string media_type = source.contains("media_type") ? text_of(source.at("media_type")) : "";
    if (media_type.empty()) media_type = "image/png";
    return json::object{{"type", "image_url"}, {"image_url", {{"url", "data:" + media_type + ";base64," + data}}}};
  }
  return std::nullopt;  // an image with an empty source is dropped
}

std::string joined(const std::vector<std::string>& parts, std::string_view separator) {
  std::string text;
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i ? std::string(separator) : "") + parts[i];
  return text;
}

// One message's blocks as chat messages, appended to `converted`.
void convert_blocks(const std::string& role, const json::array& blocks, json::array& converted) {
  json::array parts;
  json::array tool_calls;
  std::vector<std::string> reasoning;
  const auto flush = [&] {
    if (parts.empty()) return;
    json::object message{{"role", role}, {"content", parts}};
    if (role == "assistant" && !reasoning.empty()) message["reasoning"] = joined(reasoning, ""), reasoning.clear();
    converted.push_back(std::move(message));
    parts.clear();
  };
  for (const json::value& item : blocks) {
    const json::object& block = item.get_object();
    const std::string type = text_of(block.at("type"));
    if (type == "text") {
      parts.push_back(json::object{{"type", "text"}, {"text", block.at("text")}});
    } else if (type == "image") {
      if (std::optional<json::object> part = image_part(block)) parts.push_back(std::move(*part));
    } else if (type == "tool_use") {
      std::string arguments;
      python_dumps(block.contains("input") && !block.at("input").is_null() ? block.at("input") : json::object(), arguments);
      const json::value* id = block.if_contains("id");
      tool_calls.push_back(json::object{{"id", id && id->is_string() ? *id : json::value("toolu_0")},
                                        {"type", "function"},
                                        {"function", {{"name", block.at("name")}, {"arguments", arguments}}}});
    } else if (type == "tool_result") {
      flush();
      std::string text = tool_result_text(block.if_contains("content"));
      const json::value* is_error = block.if_contains("is_error");
      if (is_error && is_error->is_bool() && is_error->get_bool()) text = "Tool execution failed: " + text;
      converted.push_back(json::object{{"role", "tool"}, {"tool_call_id", block.at("tool_use_id")}, {"content", text}});
    } else if (type == "thinking") {
      if (role != "assistant") throw RequestError("thinking content blocks are only valid in assistant messages");
      reasoning.push_back(text_of(block.at("thinking")));
    } else if (type == "redacted_thinking") {
      throw RequestError("redacted_thinking history is not supported by this server");
    }
  }
  if (role == "assistant" && !tool_calls.empty()) {
    std::string text;
    for (const json::value& part : parts) {
      if (part.at("type") == "text") text += text_of(part.at("text"));
    }
    json::object message{{"role", "assistant"}, {"content", text.empty() ? json::value(nullptr) : json::value(text)},
                         {"tool_calls", std::move(tool_calls)}};
    if (!reasoning.empty()) message["reasoning"] = joined(reasoning, "");
    converted.push_back(std::move(message));
    return;
  }
  flush();
  if (role == "assistant" && !reasoning.empty()) {
    converted.push_back(json::object{{"role", "assistant"}, {"content", nullptr}, {"reasoning", joined(reasoning, "")}});
  }
}

// The system text first (the body's, then each system message before the first turn:
// one that comes later stays where the client put it, so the prompt's front, and its
// cached prefix, do not change), then every other message.
json::array convert_messages(const json::object& body) {
  std::vector<std::string> system_parts;
  if (const json::value* system = body.if_contains("system"); system && !system->is_null()) {
    if (system->is_string()) {
      if (!system->get_string().empty()) system_parts.push_back(text_of(*system));
    } else {
      const json::array& blocks = system->get_array();
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        const json::value* text = blocks[i].get_object().if_contains("text");
        const std::string part = text ? text_of(*text) : "";
        if (i == 0 && is_billing_block(part)) continue;
        if (!part.empty()) system_parts.push_back(part);
      }
    }
  }
  json::array converted;
  bool leading_system = true;
  for (const json::value& item : body.at("messages").get_array()) {
    const json::object& message = item.get_object();
    const std::string role = text_of(message.at("role"));
    const json::value& content = message.at("content");
    if (role == "system" && leading_system) {
      if (content.is_string()) {
        system_parts.push_back(text_of(content));
      } else {
        for (const json::value& block : content.get_array()) {
          if (block.at("type") == "text") system_parts.push_back(text_of(block.at("text")));
        }
      }
      continue;
    }
    leading_system = false;
    if (content.is_string()) {
      converted.push_back(json::object{{"role", role}, {"content", content}});
    } else {
      convert_blocks(role, content.get_array(), converted);
    }
  }
  if (!system_parts.empty()) converted.insert(converted.begin(), json::object{{"role", "system"}, {"content", joined(system_parts, "\n\n")}});
  return converted;
}

bool has_type_prefix(const json::object& tool, std::span<const std::string_view> prefixes) {
  const json::value* type = tool.if_contains("type");
  if (!type || !type->is_string() || type->get_string() == "custom") return false;
  const std::string_view name = type->get_string();
  return std::ranges::any_of(prefixes, [&](std::string_view prefix) { return name.starts_with(prefix); });
}

// The tools the chat path can run; none when there are none or tool_choice is "none".
std::optional<json::array> convert_tools(const json::object& body) {
  const json::value* tools = body.if_contains("tools");
  if (!tools || tools->is_null() || tools->get_array().empty()) return std::nullopt;
  const json::value* choice = body.if_contains("tool_choice");
  if (choice && choice->is_object() && choice->get_object().at("type") == "none") return std::nullopt;
  static constexpr std::array<std::string_view, 6> server_tools{"web_search", "web_fetch", "code_execution",
                                                                "tool_search_tool_", "advisor_", "mcp_toolset"};
  static constexpr std::array<std::string_view, 4> schema_tools{"bash_", "text_editor_", "computer_", "memory_"};
  json::array converted;
  for (const json::value& item : tools->get_array()) {
    const json::object& tool = item.get_object();
    const std::string name = quoted(tool.if_contains("name"));
    const std::string type = quoted(tool.if_contains("type"));
    if (has_type_prefix(tool, server_tools)) {
      throw RequestError("Anthropic server tool " + name + " (type=" + type + ") is not supported by this server");
    }
    const json::value* schema = tool.if_contains("input_schema");
    if (!schema || schema->is_null()) {
      if (has_type_prefix(tool, schema_tools)) {
        throw RequestError("Anthropic schema client tool " + name + " (type=" + type +
                           ") is recognized, but its built-in input schema is not implemented by this server");
      }
      throw RequestError("Client tool " + name + " requires input_schema");
    }
    const json::value* description = tool.if_contains("description");
    const json::value* strict = tool.if_contains("strict");
    converted.push_back(json::object{{"type", "function"},
                                     {"function", {{"name", tool.at("name")},
                                                   {"description", description ? *description : nullptr},
                                                   {"parameters", *schema},
                                                   {"strict", strict ? *strict : nullptr}}}});
  }
  return converted;
}

std::optional<json::value> convert_tool_choice(const json::object& body, const std::optional<json::array>& tools) {
  const json::value* given = body.if_contains("tool_choice");
  if (!given || given->is_null()) return tools ? std::optional<json::value>("auto") : std::nullopt;
  const json::object& choice = given->get_object();
  const std::string type = text_of(choice.at("type"));
  const json::value* parallel = choice.if_contains("disable_parallel_tool_use");
  if (parallel && parallel->is_bool() && parallel->get_bool() && type != "none") {
    throw RequestError("tool_choice.disable_parallel_tool_use=true is not supported");
  }
  if (type == "none") return json::value("none");
  if (!tools) {
    throw RequestError("tool_choice type '" + type +
                       "' requires at least one client-executable tool; all provided tools were server tools or "
                       "the tools list was empty");
  }
  if (type == "auto") return json::value("auto");
  if (type == "any") {
    throw RequestError("Anthropic tool_choice type 'any' is not supported because the chat pipeline cannot require "
                       "an arbitrary tool call");
  }
  const json::value* name = choice.if_contains("name");
  if (!name || !name->is_string() || name->get_string().empty()) throw RequestError("tool_choice type 'tool' requires a 'name'");
  const bool known = std::ranges::any_of(*tools, [&](const json::value& tool) {
    return tool.at("function").at("name") == *name;
  });
  if (!known) throw RequestError("tool_choice names unknown tool " + quoted(name));
  return json::value{{"type", "function"}, {"function", {{"name", *name}}}};
}

bool is_integer(const json::value* value) { return value && (value->is_int64() || value->is_uint64()); }

// Extended thinking, the effort and the output format, as the chat request and its
// template's arguments take them.
void convert_thinking_and_output(const json::object& body, json::object& chat, json::object& template_arguments) {
  if (const json::value* given = body.if_contains("thinking"); given && given->is_object() && !given->get_object().empty()) {
    const json::object& thinking = given->get_object();
    const json::value* type = thinking.if_contains("type");
    const json::value* budget = thinking.if_contains("budget_tokens");
    const std::string kind = type && type->is_string() ? std::string(type->get_string()) : "";
    if (kind == "enabled") {
      template_arguments["enable_thinking"] = true;
      if (!is_integer(budget) || budget->to_number<double>() < 1024) {
        throw RequestError("thinking.type='enabled' requires budget_tokens >= 1024");
      }
      if (budget->to_number<double>() >= body.at("max_tokens").to_number<double>()) {
        throw RequestError("thinking budget_tokens must be less than max_tokens");
      }
      chat["thinking_token_budget"] = *budget;
    } else if (kind == "adaptive" || kind == "disabled") {
      if (budget && !budget->is_null()) throw RequestError("thinking.type='" + kind + "' does not accept budget_tokens");
      template_arguments["enable_thinking"] = kind == "adaptive";
    } else {
      throw RequestError("Unsupported thinking type " + quoted(type));
    }
  }
  if (const json::value* given = body.if_contains("output_config"); given && given->is_object() && !given->get_object().empty()) {
    const json::object& output = given->get_object();
    if (const json::value* effort = output.if_contains("effort"); effort && effort->is_string() && !effort->get_string().empty()) {
      template_arguments["reasoning_effort"] = *effort;
    }
    if (const json::value* format = output.if_contains("format"); format && !format->is_null()) {
      if (!format->is_object()) throw RequestError("output_config.format must be an object");
      if (format->get_object().if_contains("type") == nullptr || format->at("type") != "json_schema") {
        throw RequestError("Only output_config.format type 'json_schema' is supported");
      }
      const json::value* schema = format->get_object().if_contains("schema");
      if (!schema || !schema->is_object()) throw RequestError("output_config.format.schema must be an object");
      chat["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"schema", *schema}}}};
    }
  }
  // Context editing that keeps every turn's reasoning: both templates' names for it.
  const json::value* management = body.if_contains("context_management");
  const json::value* edits = management && management->is_object() ? management->get_object().if_contains("edits") : nullptr;
  if (edits && edits->is_array()) {
    for (const json::value& edit : edits->get_array()) {
      const json::value* type = edit.is_object() ? edit.get_object().if_contains("type") : nullptr;
      if (!type || !type->is_string() || !type->get_string().starts_with("clear_thinking")) continue;
      const json::value* keep = edit.get_object().if_contains("keep");
      if (keep && *keep == "all") {
        template_arguments["clear_thinking"] = false;
        template_arguments["drop_thinking"] = false;
      }
      break;
    }
  }
}

}  // namespace

json::object to_chat_request(const json::object& body) {
  json::array messages = convert_messages(body);
  if (messages.empty()) throw RequestError("messages must not be empty");
  const std::optional<json::array> tools = convert_tools(body);
  const std::optional<json::value> tool_choice = convert_tool_choice(body, tools);
  const json::value* stream = body.if_contains("stream");
  const bool streamed = stream && stream->is_bool() && stream->get_bool();
  json::object chat{{"model", body.at("model")},
                    {"messages", std::move(messages)},
                    {"max_completion_tokens", body.at("max_tokens")},
                    {"stream", streamed}};
  if (tools) chat["tools"] = *tools;
  if (tool_choice) chat["tool_choice"] = *tool_choice;
  for (const char* name : {"temperature", "top_p", "top_k"}) {
    if (const json::value* value = body.if_contains(name); value && !value->is_null()) chat[name] = *value;
  }
  if (const json::value* stop = body.if_contains("stop_sequences"); stop && stop->is_array() && !stop->get_array().empty()) {
    chat["stop"] = *stop;
  }
  json::object template_arguments;
  convert_thinking_and_output(body, chat, template_arguments);
  if (!template_arguments.empty()) chat["chat_template_kwargs"] = std::move(template_arguments);
  if (streamed) chat["stream_options"] = {{"include_usage", true}, {"continuous_usage_stats", true}};
  return chat;
}

json::object count_tokens_chat_request(const json::object& body) {
  json::object request{{"model", body.at("model")}, {"messages", body.at("messages")}, {"max_tokens", 1}};
  const json::value* thinking = body.if_contains("thinking");
  if (thinking && thinking->is_object() && thinking->get_object().if_contains("type") &&
      thinking->at("type") == "enabled" && is_integer(thinking->get_object().if_contains("budget_tokens"))) {
    request["max_tokens"] = thinking->at("budget_tokens").to_number<std::int64_t>() + 1;
  }
  for (const char* name : {"system", "tools", "tool_choice", "thinking", "output_config", "betas", "context_management"}) {
    if (const json::value* value = body.if_contains(name)) request[name] = *value;
  }
  return to_chat_request(request);
}

}  // namespace jsonl_perf::serve::anthropic
