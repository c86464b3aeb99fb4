// Typed records: any struct described with Boost.Describe becomes a line with no DOM
// built on the way.
//
//   struct Request { std::string id; std::optional<double> latency_s; std::vector<int> tokens; };
//   BOOST_DESCRIBE_STRUCT(Request, (), (id, latency_s, tokens))
//   jsonl::JsonlRecordWriter<Request> writer(options, std::make_shared<jsonl::DescribedFormat<Request>>());
//
// The members, in declaration order, become an object's members: an empty std::optional
// leaves its key out, a std::vector is an array, a nested described struct an object, a
// std::variant its alternative's value, a boost::json::value itself; bool, integers,
// floating point and strings are written as append_json writes them (Python's bytes; a
// NaN or infinite number makes the record malformed). Inside an array an empty optional
// is null.
module;

#include <boost/describe.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <boost/mp11/algorithm.hpp>

#include <concepts>
#include <utility>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

export module jsonl.writer:described;

import :json_text;
import :format;

export namespace jsonl {

template <class T>
concept DescribedStruct = boost::describe::has_describe_members<T>::value;

// Writes `value` as JSON text (the rules above).
template <class T>
void write_json(JsonTextStream& out, const T& value);
template <class T>
void write_json(JsonTextStream& out, const std::optional<T>& value);
template <class T, class Allocator>
void write_json(JsonTextStream& out, const std::vector<T, Allocator>& items);
template <class... Alternatives>
void write_json(JsonTextStream& out, const std::variant<Alternatives...>& value);

// The value append_json would write the same bytes for (for tests and tools that need
// a DOM, such as comparing the typed and the JSON paths).
// Built in `storage` (say, make_record_arena()).
template <class T>
boost::json::value to_json_value(const T& value, boost::json::storage_ptr storage = {});
template <class T>
boost::json::value to_json_value(const std::optional<T>& value, boost::json::storage_ptr storage = {});
template <class T, class Allocator>
boost::json::value to_json_value(const std::vector<T, Allocator>& items, boost::json::storage_ptr storage = {});
template <class... Alternatives>
boost::json::value to_json_value(const std::variant<Alternatives...>& value, boost::json::storage_ptr storage = {});

// Whether writing `value` as a member leaves its key out.
template <class T>
bool leaves_key_out(const T&) {
  return false;
}
template <class T>
bool leaves_key_out(const std::optional<T>& value) {
  return !value.has_value();
}

// Calls `visit(name, field)` for each public member of `value`, in declaration order.
template <DescribedStruct T, class Visit>
void for_each_member(const T& value, Visit&& visit) {
  boost::mp11::mp_for_each<boost::describe::describe_members<T, boost::describe::mod_public>>(
      [&](auto member) { visit(std::string_view(member.name), value.*member.pointer); });
}

// `value`'s members as an object's.
template <DescribedStruct T>
void write_members(JsonTextStream& out, const T& value) {
  out.begin_object();
  for_each_member(value, [&](std::string_view name, const auto& field) {
    if (leaves_key_out(field)) return;
    out.key(name);
    write_json(out, field);
  });
  out.end_object();
}

// Whether `value` is written as an empty object: every member an empty optional.
template <DescribedStruct T>
bool is_empty_object(const T& value) {
  bool empty = true;
  for_each_member(value, [&](std::string_view, const auto& field) { empty = empty && leaves_key_out(field); });
  return empty;
}

template <class T>
void write_json(JsonTextStream& out, const T& value) {
  if constexpr (DescribedStruct<T>) {
    write_members(out, value);
  } else if constexpr (std::is_same_v<T, bool>) {
    out.boolean(value);
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    out.integer(value);
  } else if constexpr (std::is_integral_v<T>) {
    out.unsigned_integer(value);
  } else if constexpr (std::is_floating_point_v<T>) {
    out.floating(static_cast<double>(value));
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out.string(std::string_view(value));
  } else if constexpr (std::is_same_v<T, boost::json::value>) {
    out.value(value);
  } else {
    static_assert(sizeof(T) == 0, "no JSON form for this member type");
  }
}

template <class T>
void write_json(JsonTextStream& out, const std::optional<T>& value) {
  if (value) {
    write_json(out, *value);
  } else {
    out.null();
  }
}

template <class T, class Allocator>
void write_json(JsonTextStream& out, const std::vector<T, Allocator>& items) {
  out.begin_array();
  for (const T& item : items) write_json(out, item);
  out.end_array();
}

template <class... Alternatives>
void write_json(JsonTextStream& out, const std::variant<Alternatives...>& value) {
  std::visit([&](const auto& alternative) { write_json(out, alternative); }, value);
}

template <class T>
boost::json::value to_json_value(const T& value, boost::json::storage_ptr storage) {
  if constexpr (DescribedStruct<T>) {
    boost::json::object object(storage);
    object.reserve(boost::mp11::mp_size<boost::describe::describe_members<T, boost::describe::mod_public>>::value);
    for_each_member(value, [&](std::string_view name, const auto& field) {
      if (!leaves_key_out(field)) object.emplace(name, to_json_value(field, storage));
    });
    return boost::json::value(std::move(object));
  } else if constexpr (std::is_same_v<T, bool> || std::is_arithmetic_v<T>) {
    return boost::json::value(value, std::move(storage));
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return boost::json::value(std::string_view(value), std::move(storage));
  } else if constexpr (std::is_same_v<T, boost::json::value>) {
    return boost::json::value(value, std::move(storage));
  } else {
    static_assert(sizeof(T) == 0, "no JSON form for this member type");
  }
}

template <class T>
boost::json::value to_json_value(const std::optional<T>& value, boost::json::storage_ptr storage) {
  return value ? to_json_value(*value, std::move(storage)) : boost::json::value(nullptr, std::move(storage));
}

template <class T, class Allocator>
boost::json::value to_json_value(const std::vector<T, Allocator>& items, boost::json::storage_ptr storage) {
  boost::json::array array(storage);
  array.reserve(items.size());
  for (const T& item : items) array.push_back(to_json_value(item, storage));
  return boost::json::value(std::move(array));
}

template <class... Alternatives>
boost::json::value to_json_value(const std::variant<Alternatives...>& value, boost::json::storage_ptr storage) {
  return std::visit([&](const auto& alternative) { return to_json_value(alternative, storage); }, value);
}

// The line of a described struct.
template <DescribedStruct Record>
class DescribedFormat : public RecordFormat<Record> {
 public:
  explicit DescribedFormat(JsonTextOptions options = {}) : options_(options) {}

  bool append_line(Record& record, std::string& out) const override {
    bool sanitized;
    {
      JsonTextStream stream(out, options_);
      write_members(stream, record);
      sanitized = stream.sanitized();
    }
    out += '\n';
    return sanitized;
  }

 private:
  JsonTextOptions options_;
};

}  // namespace jsonl
