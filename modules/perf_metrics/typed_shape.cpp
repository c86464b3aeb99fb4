// The schema's rules (:schema) applied to a typed record, written straight from the
// structs. Where the JSON path checks a key's presence, the typed one checks the optional
// that stands for it; a typed record cannot be wrong in type, so its only shaping error
// is a record with neither phase.
module;

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

module jsonl.perf_metrics;

import :python_int;
import :typed_records;
import :schema;

namespace jsonl {
namespace {

using namespace perf;

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

class TypedSource {
 public:
  explicit TypedSource(const PerfMetricsRecord& record) : record_(record) {}

  const PerfMetricsRecord& root() const { return record_; }
  template <class Object>
  const Object& object(const Object& value, std::string_view, std::string_view = {}) const {
    return value;
  }
  // An empty optional is an absent key; any other member is always there.
  template <class Object, class Member>
  auto find(const Object& object, const perf_schema::Field<Object, Member>& field) const {
    const Member& member = object.*field.member;
    if constexpr (is_optional<Member>::value) {
      return member ? &*member : nullptr;
    } else {
      return &member;
    }
  }
  template <class Object, class Member>
  const auto& at(const Object& object, const perf_schema::Field<Object, Member>& field) const {
    const auto* value = find(object, field);
    if (!value) throw MissingKey(field.key);
    return *value;
  }
  // An empty phase is falsy; kv_cache_size is the only number asked.
  template <class T>
  bool truthy(const T& value) const {
    if constexpr (DescribedStruct<T>) {
      return !is_empty_object(value);
    } else {
      return value != 0;
    }
  }
  template <class T>
  bool is_null(const T&) const {
    return false;
  }
  std::optional<boost::json::value> int_of(const RequestId& id) const {
    if (const auto* number = std::get_if<std::int64_t>(&id)) return boost::json::value(*number);
    return python_int(std::get<std::string>(id));
  }
  template <class Object, class Visit>
  void for_each_member(const Object& object, Visit&& visit) const {
    jsonl::for_each_member(object, [&](std::string_view name, const auto& field) {
      if (!leaves_key_out(field)) visit(name, field);
    });
  }
  template <class T>
  void write(JsonTextStream& sink, const T& value) const {
    write_json(sink, value);
  }

 private:
  const PerfMetricsRecord& record_;
};

}  // namespace

bool PerfMetricsTypedFormat::append_line(perf::PerfMetricsRecord& record, std::string& out) const {
  bool sanitized;
  {
    JsonTextStream stream(out);
    perf_schema::shape(TypedSource(record), stream);
    sanitized = stream.sanitized();
  }
  out += '\n';
  return sanitized;
}

}  // namespace jsonl
