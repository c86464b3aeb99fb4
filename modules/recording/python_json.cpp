module;

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

module jsonl.recording;

import :python_json;

namespace jsonl::recording {
namespace {

namespace json = boost::json;
using boost::system::error_code;

json::parse_options python_loads() {
  json::parse_options options;
  options.numbers = json::number_precision::precise;
  options.allow_infinity_and_nan = true;
  return options;
}

// Only a run of at least this many digits can spell an integer beyond the 64-bit ranges.
constexpr std::size_t wide_integer_digits = 19;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Whether `text` has a run of wide_integer_digits digits. A run that long starting at or
// after `from` (the first byte of the text, or one after a non-digit) covers the byte
// wide_integer_digits - 1 on, so most bytes are never looked at: where that byte is not
// a digit, the search goes on past it; where it is, its run decides.
bool may_hold_a_wide_integer(std::string_view text) {
  std::size_t from = 0;
  while (text.size() - from >= wide_integer_digits) {
    const std::size_t probe = from + wide_integer_digits - 1;
    if (!is_digit(text[probe])) {
      from = probe + 1;
      continue;
    }
    std::size_t begin = probe;
    while (begin > from && is_digit(text[begin - 1])) --begin;
    std::size_t end = probe + 1;
    while (end < text.size() && is_digit(text[end])) ++end;
    if (end - begin >= wide_integer_digits) return true;
    from = end + 1;
    if (from > text.size()) return false;
  }
  return false;
}

bool is_integer_text(std::string_view number) {
  return number.find_first_of(".eEaNIn") == std::string_view::npos;
}

// A value as Python's json.loads holds it, where Boost.JSON's value cannot: every
// integer kept as its digits.
struct PythonValue {
  enum class Kind { null, boolean, integer, floating, string, array, object };
  Kind kind = Kind::null;
  bool truth = false;
  double number = 0;
  std::string text;               // an integer's digits, or a string
  std::vector<std::string> keys;  // an object's, one per item
  std::vector<PythonValue> items;
};

// Builds a PythonValue from the parser's events. An object's repeated key keeps its
// first place and takes the later value, as a dict does.
class PythonValueBuilder {
 public:
  static constexpr std::size_t max_object_size = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t max_array_size = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t max_key_size = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t max_string_size = std::numeric_limits<std::size_t>::max();

  const PythonValue& root() const { return root_; }

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return open(PythonValue::Kind::object); }
  bool on_object_end(std::size_t, error_code&) { return close(); }
  bool on_array_begin(error_code&) { return open(PythonValue::Kind::array); }
  bool on_array_end(std::size_t, error_code&) { return close(); }
  bool on_key_part(json::string_view part, std::size_t, error_code&) { return gather(key_, part); }
  bool on_key(json::string_view part, std::size_t, error_code&) { return gather(key_, part); }
  bool on_string_part(json::string_view part, std::size_t, error_code&) { return gather(text_, part); }
  bool on_string(json::string_view part, std::size_t, error_code&) {
    gather(text_, part);
    return scalar({.kind = PythonValue::Kind::string, .text = std::exchange(text_, {})});
  }
  bool on_number_part(json::string_view part, error_code&) { return gather(text_, part); }
  bool on_int64(std::int64_t, json::string_view part, error_code&) { return integer(part); }
  bool on_uint64(std::uint64_t, json::string_view part, error_code&) { return integer(part); }
  bool on_double(double number, json::string_view part, error_code&) {
    gather(text_, part);
    if (is_integer_text(text_)) return integer({});
    text_.clear();
    return scalar({.kind = PythonValue::Kind::floating, .number = number});
  }
  bool on_bool(bool truth, error_code&) { return scalar({.kind = PythonValue::Kind::boolean, .truth = truth}); }
  bool on_null(error_code&) { return scalar({}); }
  bool on_comment_part(json::string_view, error_code&) { return true; }
  bool on_comment(json::string_view, error_code&) { return true; }

 private:
  // An open array or object, and where each of its keys is.
  struct Open {
    PythonValue* value;
    std::unordered_map<std::string, std::size_t> places;
  };

  // A key, a string or a number comes in parts when the text is fed in pieces.
  static bool gather(std::string& whole, json::string_view part) {
    whole.append(part.data(), part.size());
    return true;
  }
  bool integer(json::string_view part) {
    gather(text_, part);
    return scalar({.kind = PythonValue::Kind::integer, .text = std::exchange(text_, {})});
  }
  bool scalar(PythonValue value) { return place(std::move(value)), true; }
  bool open(PythonValue::Kind kind) {
    open_.push_back({&place({.kind = kind}), {}});
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  // The parent's items do not grow while a child is open, so a child's address holds.
  PythonValue& place(PythonValue value) {
    if (open_.empty()) return root_ = std::move(value);
    Open& parent = open_.back();
    std::vector<PythonValue>& items = parent.value->items;
    if (parent.value->kind == PythonValue::Kind::object) {
      const auto [slot, first] = parent.places.try_emplace(key_, items.size());
      key_.clear();
      if (!first) return items[slot->second] = std::move(value);
      parent.value->keys.push_back(slot->first);
    }
    return items.emplace_back(std::move(value));
  }

  PythonValue root_;
  std::vector<Open> open_;
  std::string key_;
  std::string text_;
};

void write(JsonTextStream& out, const PythonValue& value) {
  switch (value.kind) {
    case PythonValue::Kind::null:
      return out.null();
    case PythonValue::Kind::boolean:
      return out.boolean(value.truth);
    case PythonValue::Kind::integer:
      return out.integer_text(value.text);
    case PythonValue::Kind::floating:
      return out.floating(value.number);
    case PythonValue::Kind::string:
      return out.string(value.text);
    case PythonValue::Kind::array:
      out.begin_array();
      for (const PythonValue& item : value.items) write(out, item);
      return out.end_array();
    case PythonValue::Kind::object:
      out.begin_object();
      for (std::size_t i = 0; i < value.items.size(); ++i) {
        out.key(value.keys[i]);
        write(out, value.items[i]);
      }
      return out.end_object();
  }
}

}  // namespace

void write_python_json(JsonTextStream& out, std::string_view text) {
  error_code error;
  if (!may_hold_a_wide_integer(text)) {
    // Boost.JSON's value holds every number such a text spells as Python does.
    const ArenaRecord parsed = ArenaRecord::parse(text, error, python_loads());
    if (error) throw MalformedRecord("the body is not JSON: " + error.message());
    return out.value(parsed.value());
  }
  json::basic_parser<PythonValueBuilder> parser(python_loads());
  const std::size_t used = parser.write_some(false, text.data(), text.size(), error);
  if (!error && text.find_first_not_of(" \t\r\n", used) != std::string_view::npos) {
    throw MalformedRecord("the body holds more than one JSON value");
  }
  if (error) throw MalformedRecord("the body is not JSON: " + error.message());
  write(out, parser.handler().root());
}

}  // namespace jsonl::recording
