// The reference's _jsonl_record, _jsonl_worker_metrics and _jsonl_perf_metrics, in the
// same order of evaluation, so the same key goes missing first (and the same wrong type
// is found first) and output keys come in the same order.
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

json::object& as_object(json::value& value, std::string_view where) {
  if (json::object* object = value.if_object()) return *object;
  throw MalformedRecord(std::string(where) + ": expected an object, got " +
                        std::string(kind_name(value)));
}

// object[key], as Python's subscript: a missing key is a KeyError.
json::value& at(json::object& object, std::string_view key) {
  if (json::value* value = object.if_contains(key)) return *value;
  throw MissingKey(key);
}

// object.get(key), taken out of the record: null when missing.
json::value take(json::object& object, std::string_view key) {
  json::value* value = object.if_contains(key);
  return value ? std::move(*value) : json::value();
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

// The reference copies dictionaries before changing them and leaves the raw record as
// it was. The record is ours to consume here, so the same result is had by moving its
// parts and changing them in place.
json::object perf_metrics(json::object& phase, const std::string& where) {
  json::object timing;
  if (json::value* value = phase.if_contains("timing_metrics")) {
    timing = std::move(as_object(*value, where + ".timing_metrics"));
  }
  json::object metrics;
  metrics["timing_metrics"] = nullptr;  // first in key order; filled below
  for (std::string_view name : {"first_iter", "last_iter", "kv_cache_metrics", "speculative_decoding"}) {
    if (json::value* value = phase.if_contains(name)) metrics[name] = std::move(*value);
  }

  if (const json::value* size = timing.if_contains("kv_cache_size"); !size || !truthy(*size)) {
    for (std::string_view name : {"kv_cache_size", "kv_cache_transfer_start", "kv_cache_transfer_end"}) {
      timing.stable_erase(name);
    }
  }
  metrics["timing_metrics"] = std::move(timing);

  // The copy without kv_cache_hit_rate replaces the original only when it is not empty:
  // a kv_cache_metrics holding nothing else is written as it came, hit rate included.
  if (json::value* value = metrics.if_contains("kv_cache_metrics")) {
    json::object& kv_cache = as_object(*value, where + ".kv_cache_metrics");
    if (kv_cache.size() > (kv_cache.contains("kv_cache_hit_rate") ? 1u : 0u)) {
      kv_cache.stable_erase("kv_cache_hit_rate");
    }
  }
  return metrics;
}

// `phase_value` is checked to be an object only after request_id is converted, where
// the reference first calls a method on it.
json::object worker_metrics(json::value request_id, json::value ctx_request_id, json::value& phase_value,
                            const std::string& where) {
  json::object metrics;
  std::optional<json::value> converted = python_int(request_id);
  metrics["request_id"] = converted ? std::move(*converted) : std::move(request_id);
  json::object& phase = as_object(phase_value, where);
  metrics["perf_metrics"] = perf_metrics(phase, where);
  if (!ctx_request_id.is_null()) metrics["ctx_request_id"] = std::move(ctx_request_id);
  if (json::value breakdown = take(phase, "time_breakdown_metrics"); !breakdown.is_null()) {
    metrics["time_breakdown_metrics"] = std::move(breakdown);
  }
  return metrics;
}

json::value take_status(json::object& record) {
  json::value* status = record.if_contains("status");
  return status ? std::move(*status) : json::value("complete");
}

void add_disagg_request_id(json::object& record, json::object& shaped) {
  if (json::value id = take(record, "disagg_request_id"); !id.is_null()) {
    shaped["disagg_request_id"] = std::move(id);
  }
}

json::object worker_record(json::object& record, json::object& phases) {
  json::value& server = at(phases, "server");
  json::value request_id = std::move(at(record, "request_id"));
  json::object shaped =
      worker_metrics(std::move(request_id), take(record, "ctx_request_id"), server, "phases.server");
  shaped["status"] = take_status(record);
  add_disagg_request_id(record, shaped);
  return shaped;
}

json::object disagg_record(json::object& record, json::object& phases) {
  json::object& disagg = as_object(at(phases, "disagg"), "phases.disagg");
  json::value& timing_value = at(disagg, "timing_metrics");
  json::object shaped;
  shaped["ctx_server"] = std::move(at(disagg, "ctx_server"));
  shaped["gen_server"] = std::move(at(disagg, "gen_server"));
  json::object& timing = as_object(timing_value, "phases.disagg.timing_metrics");
  shaped["disagg_server_arrival_time"] = std::move(at(timing, "server_arrival_time"));
  shaped["disagg_ctx_dispatch_time"] = std::move(at(timing, "ctx_dispatch_time"));
  shaped["disagg_server_first_token_time"] = std::move(at(timing, "server_first_token_time"));
  shaped["status"] = take_status(record);
  for (std::string_view name : {"ctx", "gen"}) {
    json::value* phase_value = phases.if_contains(name);
    if (!phase_value || !truthy(*phase_value)) continue;
    const std::string where = "phases." + std::string(name);
    json::object& phase = as_object(*phase_value, where);
    // The fallback is evaluated even when the phase has its own request_id.
    const json::value& fallback_id = at(record, "request_id");
    json::value* own_id = phase.if_contains("request_id");
    json::value request_id = own_id ? std::move(*own_id) : fallback_id;
    shaped[std::string(name) + "_perf_metrics"] =
        worker_metrics(std::move(request_id), take(phase, "ctx_request_id"), *phase_value, where);
  }
  add_disagg_request_id(record, shaped);
  return shaped;
}

}  // namespace

MissingKey::MissingKey(std::string_view key) : MalformedRecord("'" + std::string(key) + "'") {}

json::value shape_perf_metrics_record(json::value&& raw) {
  json::object& record = as_object(raw, "record");
  json::value no_phases = json::object();
  json::value* phases_value = record.if_contains("phases");
  json::object& phases = as_object(phases_value ? *phases_value : no_phases, "phases");
  return phases.contains("disagg") ? disagg_record(record, phases) : worker_record(record, phases);
}

json::value shape_perf_metrics_record(const json::value& raw) { return shape_perf_metrics_record(json::value(raw)); }

}  // namespace jsonl
