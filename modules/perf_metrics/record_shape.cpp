// The schema's rules (:schema) applied to a raw JSON record, for two outputs: ValueBuilder
// builds the shaped value (shape_perf_metrics_record), JsonTextStream writes its JSON text
// straight away (PerfMetricsFormat), and Validator only lets the checks run.
module;

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

module jsonl.perf_metrics;

import :python_int;
import :schema;

namespace jsonl {
namespace {

namespace json = boost::json;

std::string_view kind_name(const json::value& value) {
  switch (value.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "bool";
    case json::kind::int64:
    case json::kind::uint64:
      return "integer";
    case json::kind::double_:
      return "number";
    case json::kind::string:
      return "string";
    case json::kind::array:
      return "array";
    case json::kind::object:
      return "object";
  }
  return "value";
}

// `value` as an object; else malformed, naming where it was found (`where` + `member`).
const json::object& as_object(const json::value& value, std::string_view where, std::string_view member = {}) {
  if (const json::object* object = value.if_object()) return *object;
  throw MalformedRecord(std::string(where) + std::string(member) + ": expected an object, got " +
                        std::string(kind_name(value)));
}

// Python's truth value of a JSON value.
bool python_truthy(const json::value& value) {
  switch (value.kind()) {
    case json::kind::null:
      return false;
    case json::kind::bool_:
      return value.get_bool();
    case json::kind::int64:
      return value.get_int64() != 0;
    case json::kind::uint64:
      return value.get_uint64() != 0;
    case json::kind::double_:
      return value.get_double() != 0.0;  // NaN is truthy, as in Python
    case json::kind::string:
      return !value.get_string().empty();
    case json::kind::array:
      return !value.get_array().empty();
    case json::kind::object:
      return !value.get_object().empty();
  }
  return false;
}

// Reads a raw record as it came, never changing it.
class JsonSource {
 public:
  explicit JsonSource(const json::value& record) : record_(record) {}

  const json::value& root() const { return record_; }
  const json::object& object(const json::value& value, std::string_view where, std::string_view member = {}) const {
    return as_object(value, where, member);
  }
  template <class Field>
  const json::value* find(const json::object& object, const Field& field) const {
    return object.if_contains(field.key);
  }
  // object[key], as Python's subscript: a missing key is a KeyError.
  template <class Field>
  const json::value& at(const json::object& object, const Field& field) const {
    if (const json::value* value = object.if_contains(field.key)) return *value;
    throw MissingKey(field.key);
  }
  bool truthy(const json::value& value) const { return python_truthy(value); }
  bool is_null(const json::value& value) const { return value.is_null(); }
  std::optional<json::value> int_of(const json::value& request_id) const { return python_int(request_id); }
  template <class Visit>
  void for_each_member(const json::object& object, Visit&& visit) const {
    for (const auto& member : object) visit(std::string_view(member.key()), member.value());
  }
  template <class Sink>
  void write(Sink& sink, const json::value& value) const {
    sink.value(value);
  }

 private:
  const json::value& record_;
};

// Builds the shaped record as a value.
class ValueBuilder {
 public:
  void begin_object() { open_.emplace_back(); }
  void key(std::string_view name) { open_.back().key = name; }
  void value(const json::value& value) { put(value); }
  void end_object() {
    json::object done = std::move(open_.back().object);
    open_.pop_back();
    if (open_.empty()) {
      result_ = std::move(done);
    } else {
      put(std::move(done));
    }
  }
  json::value result() && { return std::move(result_); }

 private:
  // The member being added to the innermost open object.
  void put(json::value value) { open_.back().object[open_.back().key] = std::move(value); }

  struct Open {
    json::object object;
    std::string_view key;  // of the member being added: the raw record's or the schema's
  };
  std::vector<Open> open_;
  json::value result_;
};

// Takes nothing down: for running the checks alone.
struct Validator {
  void begin_object() {}
  void key(std::string_view) {}
  void value(const json::value&) {}
  void end_object() {}
};

}  // namespace

MissingKey::MissingKey(std::string_view key) : MalformedRecord("'" + std::string(key) + "'") {}

json::value shape_perf_metrics_record(const json::value& raw) {
  ValueBuilder builder;
  perf_schema::shape(JsonSource(raw), builder);
  return std::move(builder).result();
}

bool append_shaped_json(const json::value& raw, std::string& out) {
  // The reference shapes the whole record before json.dumps sees any of it, so a record
  // wrong in both ways reports its shaping error: the checks run first, on their own.
  const JsonSource source(raw);
  Validator validator;
  perf_schema::shape(source, validator);
  JsonTextStream stream(out);
  perf_schema::shape(source, stream);
  return stream.sanitized();
}

}  // namespace jsonl
