// A Messages request: checked as the reference's permissive model checks it, then
// converted to the chat completion request the chat path answers.
#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "anthropic.hpp"
#include "openai.hpp"

namespace jsonl_perf::serve::anthropic {
namespace {

namespace json = boost::json;

constexpr std::array<std::string_view, 6> block_types{"text", "image", "tool_use", "tool_result", "thinking",
                                                      "redacted_thinking"};

// `loc` one step further in: a field's name, or an item's index.
json::array at(json::array loc, std::string_view name) {
  loc.emplace_back(json::string(name));
  return loc;
}
json::array at(json::array loc, std::size_t index) {
  loc.emplace_back(index);
  return loc;
}

// Checks the field `name` of `object` against a kind; `required` fields must be there.
enum class Kind { string, integer, number, boolean, object, string_list };

void check(const json::object& object, std::string_view name, Kind kind, bool required, const json::array& loc,
           json::array& errors) {
  const json::value* value = object.if_contains(name);
  if (!value) {
    if (required) errors.push_back(validation_error(at(loc, name), "missing", "Field required"));
    return;
  }
  if (value->is_null() && !required) return;
  auto fail = [&](std::string_view type, std::string_view msg) { errors.push_back(validation_error(at(loc, name), type, msg)); };
  switch (kind) {
    case Kind::string:
      if (!value->is_string()) fail("string_type", "Input should be a valid string");
      break;
    case Kind::integer:
      if (!value->is_int64() && !value->is_uint64()) fail("int_type", "Input should be a valid integer");
      break;
    case Kind::number:
      if (!value->is_number()) fail("float_type", "Input should be a valid number");
      break;
    case Kind::boolean:
      if (!value->is_bool()) fail("bool_type", "Input should be a valid boolean");
      break;
    case Kind::object:
      if (!value->is_object()) fail("dict_type", "Input should be a valid dictionary");
      break;
    case Kind::string_list:
      if (!value->is_array() || !std::ranges::all_of(value->get_array(), &json::value::is_string)) {
        fail("list_type", "Input should be a valid list of strings");
      }
      break;
  }
}

void check_content(const json::value& content, const json::array& loc, json::array& errors);

// A content block: an object whose `type` is one the model knows, with its own fields.
void check_block(const json::value& block, const json::array& loc, json::array& errors) {
  const json::object* fields = block.if_object();
  if (!fields) {
    errors.push_back(validation_error(loc, "model_type", "Input should be a valid dictionary or object"));
    return;
  }
  const json::value* type = fields->if_contains("type");
  if (!type || !type->is_string() || std::ranges::find(block_types, std::string_view(type->get_string())) == block_types.end()) {
    errors.push_back(validation_error(at(loc, "type"), "literal_error",
                                      "Input should be 'text', 'image', 'tool_use', 'tool_result', 'thinking' or "
                                      "'redacted_thinking'"));
    return;
  }
  const std::string_view kind = type->get_string();
  if (kind == "text") check(*fields, "text", Kind::string, true, loc, errors);
  if (kind == "image") check(*fields, "source", Kind::object, true, loc, errors);
  if (kind == "tool_use") {
    check(*fields, "name", Kind::string, true, loc, errors);
    check(*fields, "input", Kind::object, false, loc, errors);
  }
  if (kind == "tool_result") {
    check(*fields, "tool_use_id", Kind::string, true, loc, errors);
    if (const json::value* content = fields->if_contains("content"); content && !content->is_null()) {
      check_content(*content, at(loc, "content"), errors);
    }
  }
  if (kind == "thinking") check(*fields, "thinking", Kind::string, true, loc, errors);
}

void check_content(const json::value& content, const json::array& loc, json::array& errors) {
  if (content.is_string()) return;
  const json::array* blocks = content.if_array();
  if (!blocks) {
    errors.push_back(validation_error(loc, "union_type", "Input should be a valid string or a list of content blocks"));
    return;
  }
  for (std::size_t i = 0; i < blocks->size(); ++i) check_block((*blocks)[i], at(loc, i), errors);
}

// What a Messages body and a count_tokens body share.
const json::object* check_common(const json::value& body, json::array& errors) {
  const json::object* object = body.if_object();
  if (!object) {
    errors.push_back(validation_error({"body"}, "model_attributes_type",
                                      "Input should be a valid dictionary or object to extract fields from"));
    return nullptr;
  }
  const json::array loc{"body"};
  check(*object, "model", Kind::string, true, loc, errors);
  if (const json::value* messages = object->if_contains("messages"); !messages) {
    errors.push_back(validation_error({"body", "messages"}, "missing", "Field required"));
  } else if (!messages->is_array()) {
    errors.push_back(validation_error({"body", "messages"}, "list_type", "Input should be a valid list"));
  } else {
    for (std::size_t i = 0; i < messages->get_array().size(); ++i) {
      const json::array message_loc{"body", "messages", i};
      const json::object* message = messages->get_array()[i].if_object();
      if (!message) {
        errors.push_back(validation_error(message_loc, "model_type", "Input should be a valid dictionary or object"));
        continue;
      }
      const json::value* role = message->if_contains("role");
      if (!role) {
        errors.push_back(validation_error(at(message_loc, "role"), "missing", "Field required"));
      } else if (!role->is_string() || (role->get_string() != "user" && role->get_string() != "assistant" &&
                                        role->get_string() != "system")) {
        errors.push_back(validation_error(at(message_loc, "role"), "literal_error",
                                          "Input should be 'user', 'assistant' or 'system'"));
      }
      if (const json::value* content = message->if_contains("content")) {
        check_content(*content, at(message_loc, "content"), errors);
      } else {
        errors.push_back(validation_error(at(message_loc, "content"), "missing", "Field required"));
      }
    }
  }
  if (const json::value* system = object->if_contains("system"); system && !system->is_null()) {
    check_content(*system, {"body", "system"}, errors);
  }
  if (const json::value* tools = object->if_contains("tools"); tools && !tools->is_null()) {
    if (!tools->is_array()) {
      errors.push_back(validation_error({"body", "tools"}, "list_type", "Input should be a valid list"));
    } else {
      for (std::size_t i = 0; i < tools->get_array().size(); ++i) {
        const json::array tool_loc{"body", "tools", i};
        if (const json::object* tool = tools->get_array()[i].if_object()) {
          check(*tool, "name", Kind::string, true, tool_loc, errors);
          check(*tool, "type", Kind::string, false, tool_loc, errors);
          check(*tool, "input_schema", Kind::object, false, tool_loc, errors);
        } else {
          errors.push_back(validation_error(tool_loc, "model_type", "Input should be a valid dictionary or object"));
        }
      }
    }
  }
  if (const json::value* choice = object->if_contains("tool_choice"); choice && !choice->is_null()) {
    const json::object* fields = choice->if_object();
    const json::value* type = fields ? fields->if_contains("type") : nullptr;
    if (!type || !type->is_string() ||
        (type->get_string() != "auto" && type->get_string() != "any" && type->get_string() != "tool" &&
         type->get_string() != "none")) {
      errors.push_back(validation_error({"body", "tool_choice", "type"}, "literal_error",
                                        "Input should be 'auto', 'any', 'tool' or 'none'"));
    }
  }
  for (const char* name : {"thinking", "output_config", "context_management"}) check(*object, name, Kind::object, false, loc, errors);
  check(*object, "betas", Kind::string_list, false, loc, errors);
  return object;
}

}  // namespace

json::array validate_messages(const json::value& body) {
  json::array errors;
  if (const json::object* object = check_common(body, errors)) {
    const json::array loc{"body"};
    check(*object, "max_tokens", Kind::integer, true, loc, errors);
    check(*object, "stream", Kind::boolean, false, loc, errors);
    for (const char* name : {"temperature", "top_p"}) check(*object, name, Kind::number, false, loc, errors);
    check(*object, "top_k", Kind::integer, false, loc, errors);
    check(*object, "stop_sequences", Kind::string_list, false, loc, errors);
    check(*object, "metadata", Kind::object, false, loc, errors);
  }
  return errors;
}

json::array validate_count_tokens(const json::value& body) {
  json::array errors;
  check_common(body, errors);
  return errors;
}

}  // namespace jsonl_perf::serve::anthropic
