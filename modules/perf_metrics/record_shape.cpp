// The reference's _jsonl_record, _jsonl_worker_metrics and _jsonl_perf_metrics, in the
// same order of evaluation, so the same key goes missing first and output keys come in
// the same order.
module;

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>

module jsonl.perf_metrics;

import :python_int;

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

const json::object& as_object(const json::value& value, std::string_view where) {
  if (const json::object* object = value.if_object()) return *object;
  throw MalformedRecord(std::string(where) + ": expected an object, got " +
                        std::string(kind_name(value)));
}

// object[key], as Python's subscript: a missing key is a KeyError.
const json::value& at(const json::object& object, std::string_view key) {
  if (const json::value* value = object.if_contains(key)) return *value;
  throw MissingKey(key);
}

// object.get(key): null when missing.
const json::value& get(const json::object& object, std::string_view key) {
  static const json::value none;
  const json::value* value = object.if_contains(key);
  return value ? *value : none;
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

// dict(phase_record.get(name, {})): a copy, {} when missing.
json::object copied_object(const json::object& phase, std::string_view name, std::string_view where) {
  const json::value* value = phase.if_contains(name);
  return value ? as_object(*value, std::string(where) + "." + std::string(name)) : json::object();
}

json::object perf_metrics(const json::object& phase, std::string_view where) {
  json::object metrics;
  metrics["timing_metrics"] = copied_object(phase, "timing_metrics", where);
  for (std::string_view name : {"first_iter", "last_iter", "kv_cache_metrics", "speculative_decoding"}) {
    if (const json::value* value = phase.if_contains(name)) metrics[name] = *value;
  }

  json::object& timing = metrics["timing_metrics"].as_object();
  if (!truthy(get(timing, "kv_cache_size"))) {
    for (std::string_view name : {"kv_cache_size", "kv_cache_transfer_start", "kv_cache_transfer_end"}) {
      timing.stable_erase(name);
    }
  }

  // The copy without kv_cache_hit_rate replaces the original only when it is not empty:
  // a kv_cache_metrics holding nothing else is written as it came, hit rate included.
  json::object kv_cache = copied_object(metrics, "kv_cache_metrics", where);
  kv_cache.stable_erase("kv_cache_hit_rate");
  if (!kv_cache.empty()) metrics["kv_cache_metrics"] = std::move(kv_cache);
  return metrics;
}

json::object worker_metrics(const json::value& request_id, const json::value& ctx_request_id,
                            const json::object& phase, std::string_view where) {
  json::object metrics;
  std::optional<json::value> converted = python_int(request_id);
  metrics["request_id"] = converted ? std::move(*converted) : request_id;
  metrics["perf_metrics"] = perf_metrics(phase, where);
  if (!ctx_request_id.is_null()) metrics["ctx_request_id"] = ctx_request_id;
  if (const json::value& breakdown = get(phase, "time_breakdown_metrics"); !breakdown.is_null()) {
    metrics["time_breakdown_metrics"] = breakdown;
  }
  return metrics;
}

json::value status_of(const json::object& record) {
  const json::value* status = record.if_contains("status");
  return status ? *status : json::value("complete");
}

void add_disagg_request_id(const json::object& record, json::object& shaped) {
  if (const json::value& id = get(record, "disagg_request_id"); !id.is_null()) {
    shaped["disagg_request_id"] = id;
  }
}

json::object worker_record(const json::object& record, const json::object& phases) {
  const json::object& server = as_object(at(phases, "server"), "phases.server");
  json::object shaped =
      worker_metrics(at(record, "request_id"), get(record, "ctx_request_id"), server, "phases.server");
  shaped["status"] = status_of(record);
  add_disagg_request_id(record, shaped);
  return shaped;
}

json::object disagg_record(const json::object& record, const json::object& phases) {
  const json::object& disagg = as_object(at(phases, "disagg"), "phases.disagg");
  const json::object& timing = as_object(at(disagg, "timing_metrics"), "phases.disagg.timing_metrics");
  json::object shaped;
  shaped["ctx_server"] = at(disagg, "ctx_server");
  shaped["gen_server"] = at(disagg, "gen_server");
  shaped["disagg_server_arrival_time"] = at(timing, "server_arrival_time");
  shaped["disagg_ctx_dispatch_time"] = at(timing, "ctx_dispatch_time");
  shaped["disagg_server_first_token_time"] = at(timing, "server_first_token_time");
  shaped["status"] = status_of(record);
  for (std::string_view name : {"ctx", "gen"}) {
    const json::value& phase_value = get(phases, name);
    if (!truthy(phase_value)) continue;
    const std::string where = "phases." + std::string(name);
    const json::object& phase = as_object(phase_value, where);
    // The fallback is evaluated even when the phase has its own request_id.
    const json::value& fallback_id = at(record, "request_id");
    const json::value* own_id = phase.if_contains("request_id");
    shaped[std::string(name) + "_perf_metrics"] =
        worker_metrics(own_id ? *own_id : fallback_id, get(phase, "ctx_request_id"), phase, where);
  }
  add_disagg_request_id(record, shaped);
  return shaped;
}

}  // namespace

MissingKey::MissingKey(std::string_view key) : MalformedRecord("'" + std::string(key) + "'") {}

json::value shape_perf_metrics_record(const json::value& raw) {
  const json::object& record = as_object(raw, "record");
  static const json::value no_phases = json::object();
  const json::value* phases_value = record.if_contains("phases");
  const json::object& phases = as_object(phases_value ? *phases_value : no_phases, "phases");
  return phases.contains("disagg") ? disagg_record(record, phases) : worker_record(record, phases);
}

}  // namespace jsonl
