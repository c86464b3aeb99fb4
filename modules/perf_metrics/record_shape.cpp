// The reference's _jsonl_record, _jsonl_worker_metrics and _jsonl_perf_metrics, in the
// same order of evaluation, so the same key goes missing first (and the same wrong type
// is found first) and output keys come in the same order.
//
// One description of the schema serves two outputs. It reads the raw record, never
// changing it, and passes the shaped record's pieces to a sink: ValueBuilder builds the
// shaped value (shape_perf_metrics_record), JsonTextStream writes its JSON text straight
// away (PerfMetricsFormat), and Validator only lets the checks run.
module;

#include <boost/json.hpp>
#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

module jsonl.perf_metrics;

import :python_int;
import :schema;

namespace jsonl {
namespace {

namespace json = boost::json;
namespace key = perf_schema;

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

// object[key], as Python's subscript: a missing key is a KeyError.
const json::value& at(const json::object& object, std::string_view key) {
  if (const json::value* value = object.if_contains(key)) return *value;
  throw MissingKey(key);
}

// Python's truth value of a JSON value.
bool truthy(const json::value& value) {
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

// Builds the shaped record as a value.
class ValueBuilder {
 public:
  void begin_object() { open_.emplace_back(); }
  void key(std::string_view name) { open_.back().key = name; }
  void value(const json::value& value) { put(value); }
  void object_without(const json::object& members, std::initializer_list<std::string_view> omitted) {
    json::object kept;
    for (const auto& member : members) {
      if (std::find(omitted.begin(), omitted.end(), member.key()) == omitted.end()) {
        kept.emplace(member.key(), member.value());
      }
    }
    put(std::move(kept));
  }
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
    std::string key;  // of the member being added
  };
  std::vector<Open> open_;
  json::value result_;
};

// Takes nothing down: for running the checks alone.
struct Validator {
  void begin_object() {}
  void key(std::string_view) {}
  void value(const json::value&) {}
  void object_without(const json::object&, std::initializer_list<std::string_view>) {}
  void end_object() {}
};

// The reference copies dictionaries before changing them; here the changes are
// omissions made while writing.
template <class Sink>
void perf_metrics(const json::object& phase, std::string_view where, Sink& sink) {
  static const json::object no_timing;
  const json::object* timing = &no_timing;
  if (const json::value* value = phase.if_contains(key::timing_metrics)) {
    timing = &as_object(*value, where, ".timing_metrics");
  }
  sink.begin_object();
  sink.key(key::timing_metrics);
  if (const json::value* size = timing->if_contains(key::kv_cache_size); !size || !truthy(*size)) {
    const auto& transfer = key::transfer_keys;
    sink.object_without(*timing, {transfer[0], transfer[1], transfer[2]});
  } else {
    sink.object_without(*timing, {});
  }
  for (std::string_view name : {key::first_iter, key::last_iter}) {
    if (const json::value* value = phase.if_contains(name)) {
      sink.key(name);
      sink.value(*value);
    }
  }
  // The copy without kv_cache_hit_rate replaces the original only when it is not empty:
  // a kv_cache_metrics holding nothing else is written as it came, hit rate included.
  if (const json::value* value = phase.if_contains(key::kv_cache_metrics)) {
    const json::object& kv_cache = as_object(*value, where, ".kv_cache_metrics");
    sink.key(key::kv_cache_metrics);
    if (kv_cache.size() > (kv_cache.contains(key::kv_cache_hit_rate) ? 1u : 0u)) {
      sink.object_without(kv_cache, {key::kv_cache_hit_rate});
    } else {
      sink.object_without(kv_cache, {});
    }
  }
  if (const json::value* value = phase.if_contains(key::speculative_decoding)) {
    sink.key(key::speculative_decoding);
    sink.value(*value);
  }
  sink.end_object();
}

// The members of _jsonl_worker_metrics' result. `phase_value` is checked to be an object
// only after request_id is converted, where the reference first calls a method on it.
template <class Sink>
void worker_metrics(const json::value& request_id, const json::value* ctx_request_id,
                    const json::value& phase_value, std::string_view where, Sink& sink) {
  const std::optional<json::value> converted = python_int(request_id);
  const json::object& phase = as_object(phase_value, where);
  sink.key(key::request_id);
  sink.value(converted ? *converted : request_id);
  sink.key(key::perf_metrics);
  perf_metrics(phase, where, sink);
  if (ctx_request_id && !ctx_request_id->is_null()) {
    sink.key(key::ctx_request_id);
    sink.value(*ctx_request_id);
  }
  if (const json::value* breakdown = phase.if_contains(key::time_breakdown_metrics); breakdown && !breakdown->is_null()) {
    sink.key(key::time_breakdown_metrics);
    sink.value(*breakdown);
  }
}

template <class Sink>
void status(const json::object& record, Sink& sink) {
  static const json::value complete(key::default_status);
  const json::value* status = record.if_contains(key::status);
  sink.key(key::status);
  sink.value(status ? *status : complete);
}

template <class Sink>
void disagg_request_id(const json::object& record, Sink& sink) {
  if (const json::value* id = record.if_contains(key::disagg_request_id); id && !id->is_null()) {
    sink.key(key::disagg_request_id);
    sink.value(*id);
  }
}

template <class Sink>
void worker_record(const json::object& record, const json::object& phases, Sink& sink) {
  const json::value& server = at(phases, key::server);
  const json::value& request_id = at(record, key::request_id);
  sink.begin_object();
  worker_metrics(request_id, record.if_contains(key::ctx_request_id), server, "phases.server", sink);
  status(record, sink);
  disagg_request_id(record, sink);
  sink.end_object();
}

template <class Sink>
void disagg_record(const json::object& record, const json::object& phases, Sink& sink) {
  const json::object& disagg = as_object(at(phases, key::disagg), "phases.disagg");
  const json::value& timing_value = at(disagg, key::timing_metrics);
  const json::value& ctx_server = at(disagg, key::ctx_server);
  const json::value& gen_server = at(disagg, key::gen_server);
  const json::object& timing = as_object(timing_value, "phases.disagg.timing_metrics");
  const json::value& arrival = at(timing, key::server_arrival_time.from);
  const json::value& dispatch = at(timing, key::ctx_dispatch_time.from);
  const json::value& first_token = at(timing, key::server_first_token_time.from);
  sink.begin_object();
  sink.key(key::ctx_server);
  sink.value(ctx_server);
  sink.key(key::gen_server);
  sink.value(gen_server);
  sink.key(key::server_arrival_time.to);
  sink.value(arrival);
  sink.key(key::ctx_dispatch_time.to);
  sink.value(dispatch);
  sink.key(key::server_first_token_time.to);
  sink.value(first_token);
  status(record, sink);
  for (const key::NestedPhase& nested : key::nested_phases) {
    const std::string_view where = nested.where;
    const json::value* phase_value = phases.if_contains(nested.phase);
    if (!phase_value || !truthy(*phase_value)) continue;
    const json::object& phase = as_object(*phase_value, where);
    // The fallback is evaluated even when the phase has its own request_id.
    const json::value& fallback_id = at(record, key::request_id);
    const json::value* own_id = phase.if_contains(key::request_id);
    sink.key(nested.key);
    sink.begin_object();
    worker_metrics(own_id ? *own_id : fallback_id, phase.if_contains(key::ctx_request_id), *phase_value, where, sink);
    sink.end_object();
  }
  disagg_request_id(record, sink);
  sink.end_object();
}

template <class Sink>
void shape(const json::value& raw, Sink& sink) {
  static const json::value no_phases = json::object();
  const json::object& record = as_object(raw, "record");
  const json::value* phases_value = record.if_contains(key::phases);
  const json::object& phases = as_object(phases_value ? *phases_value : no_phases, key::phases);
  if (phases.contains(key::disagg)) {
    disagg_record(record, phases, sink);
  } else {
    worker_record(record, phases, sink);
  }
}

}  // namespace

MissingKey::MissingKey(std::string_view key) : MalformedRecord("'" + std::string(key) + "'") {}

json::value shape_perf_metrics_record(const json::value& raw) {
  ValueBuilder builder;
  shape(raw, builder);
  return std::move(builder).result();
}

bool append_shaped_json(const json::value& raw, std::string& out) {
  // The reference shapes the whole record before json.dumps sees any of it, so a record
  // wrong in both ways reports its shaping error: the checks run first, on their own.
  Validator validator;
  shape(raw, validator);
  JsonTextStream stream(out);
  shape(raw, stream);
  return stream.sanitized();
}

}  // namespace jsonl
