module;

#include <boost/json.hpp>

#include <string_view>
#include <utility>

module jsonl.recording;

import :python_text;

namespace jsonl::recording {

namespace json = boost::json;

json::string python_str(const json::value& value) {
  switch (value.kind()) {
    case json::kind::string:
      return value.get_string();
    case json::kind::bool_:
      return value.get_bool() ? "True" : "False";
    case json::kind::null:
      return "None";
    default:
      return json::string(to_json_text(value));
  }
}

json::array brief_validation_errors(const json::array& errors) {
  json::array briefed;
  for (const json::value& error : errors) {
    const json::object* fields = error.if_object();
    if (!fields) continue;
    json::array loc;
    if (const json::value* parts = fields->if_contains("loc"); parts && parts->is_array()) {
      for (const json::value& part : parts->get_array()) loc.push_back(python_str(part));
    }
    const auto text = [&](std::string_view key) {
      const json::value* value = fields->if_contains(key);
      return value ? python_str(*value) : json::string();
    };
    briefed.push_back(json::object{{"loc", std::move(loc)}, {"type", text("type")}, {"msg", text("msg")}});
  }
  return briefed;
}

}  // namespace jsonl::recording
