#include <boost/json.hpp>

#include <charconv>
#include <cstdio>

#include "openai.hpp"
#include "sse.hpp"
#include "disaggregation.hpp"

namespace jsonl_perf::serve {
namespace {

namespace json = boost::json;

json::object error(std::string_view field, std::string_view type, std::string_view msg) {
  return validation_error({"body", "disaggregated_params", field}, type, msg);
}

std::optional<std::int64_t> read_id(const json::object& params, std::string_view name, json::array& errors) {
  const json::value* value = params.if_contains(name);
  if (!value || value->is_null()) return std::nullopt;
  if (value->is_int64()) return value->get_int64();
  errors.push_back(error(name, "int_type", "Input should be a valid integer"));
  return std::nullopt;
}

std::string milliseconds(double seconds) {
  char text[48];
  std::snprintf(text, sizeof text, "%.6f", seconds * 1000);
  return text;
}

std::string timestamp(double seconds) {
  char text[48];
  std::snprintf(text, sizeof text, "%.9f", seconds);
  return text;
}

std::optional<double> parse_number(std::string_view text) {
  double value = 0;
  const auto [end, failed] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (failed != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Each "name;key=value" item of a field's comma-separated list, trimmed.
void for_each_item(std::string_view list, std::string_view key,
                   const std::function<void(std::string_view, double)>& visit) {
  while (!list.empty()) {
    const std::size_t comma = std::min(list.find(','), list.size());
    std::string_view item = list.substr(0, comma);
    list.remove_prefix(std::min(comma + 1, list.size()));
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    const std::size_t separator = item.find(key);
    if (separator == std::string_view::npos) continue;
    if (const std::optional<double> value = parse_number(item.substr(separator + key.size()))) {
      visit(item.substr(0, separator), *value);
    }
  }
}

}  // namespace

std::optional<DisaggregatedParams> read_disaggregated_params(const json::object& body, json::array& errors) {
  const json::value* value = body.if_contains("disaggregated_params");
  if (!value || value->is_null()) return std::nullopt;
  const json::object* params = value->if_object();
  if (!params) {
    errors.push_back(validation_error({"body", "disaggregated_params"}, "model_type", "Input should be a valid dictionary"));
    return std::nullopt;
  }
  DisaggregatedParams result;
  const json::value* type = params->if_contains("request_type");
  const std::string_view name = type && type->is_string() ? std::string_view(type->get_string()) : std::string_view();
  if (name == "context_only") {
    result.request_type = HopType::context_only;
  } else if (name == "generation_only") {
    result.request_type = HopType::generation_only;
  } else if (name == "context_and_generation") {
    result.request_type = HopType::context_and_generation;
  } else {
    errors.push_back(error("request_type", "literal_error",
                           "Input should be 'context_only', 'generation_only' or 'context_and_generation'"));
  }
  result.disagg_request_id = read_id(*params, "disagg_request_id", errors);
  result.ctx_request_id = read_id(*params, "ctx_request_id", errors);
  if (const json::value* tokens = params->if_contains("first_gen_tokens"); tokens && tokens->is_array()) {
    result.first_gen_tokens = tokens->get_array();
  }
  if (result.request_type == HopType::generation_only && !result.ctx_request_id) {
    errors.push_back(error("ctx_request_id", "missing", "A generation_only request names its context's ctx_request_id"));
  }
  return result;
}

json::object params_json(const DisaggregatedParams& params) {
  constexpr const char* names[] = {"context_only", "generation_only", "context_and_generation"};
  json::object result{{"request_type", names[static_cast<int>(params.request_type)]}};
  if (!params.first_gen_tokens.empty()) result["first_gen_tokens"] = params.first_gen_tokens;
  if (params.ctx_request_id) result["ctx_request_id"] = *params.ctx_request_id;
  if (params.disagg_request_id) result["disagg_request_id"] = *params.disagg_request_id;
  return result;
}

MetricFields metric_fields(const WorkerTimes& times) {
  std::string timing = "server_queue;dur=" + milliseconds(times.first_scheduled_time - times.arrival_time);
  if (times.first_token_time) timing += ", server_ttft;dur=" + milliseconds(*times.first_token_time - times.arrival_time);
  if (times.last_token_time) timing += ", server_e2e;dur=" + milliseconds(*times.last_token_time - times.arrival_time);
  if (times.kv_cache_transfer_start && times.kv_cache_transfer_end) {
    timing += ", server_kv_transfer;dur=" + milliseconds(*times.kv_cache_transfer_end - *times.kv_cache_transfer_start);
  }
  std::string start_end = "server-start;ts=" + timestamp(times.arrival_time);
  if (times.last_token_time) start_end += ", server-end;ts=" + timestamp(*times.last_token_time);
  return {{std::string(server_timing_field), std::move(timing)}, {std::string(start_end_time_field), std::move(start_end)}};
}

std::string metrics_event(const MetricFields& fields) {
  json::object data;
  for (const auto& [name, value] : fields) data[name] = value;
  return sse::frame(json::serialize(data), metrics_event_name);
}

std::optional<jsonl::recording::HopTimes> read_metric_fields(
    const std::function<std::optional<std::string>(std::string_view)>& field) {
  const std::optional<std::string> start_end = field(start_end_time_field);
  const std::optional<std::string> timing = field(server_timing_field);
  if (!start_end && !timing) return std::nullopt;
  jsonl::recording::HopTimes times;
  for_each_item(start_end.value_or(""), ";ts=", [&](std::string_view name, double value) {
    if (name == "server-start") times.arrival_time = value;
    if (name == "server-end") times.last_token_time = value;
  });
  if (!times.arrival_time) return times;
  const double arrival = *times.arrival_time;
  for_each_item(timing.value_or(""), ";dur=", [&](std::string_view name, double value) {
    const double at = arrival + value / 1000;
    if (name == "server_queue" && !times.first_scheduled_time) times.first_scheduled_time = at;
    if (name == "server_ttft" && !times.first_token_time) times.first_token_time = at;
    if (name == "server_e2e" && !times.last_token_time) times.last_token_time = at;
  });
  return times;
}

std::optional<jsonl::recording::HopTimes> read_metrics_event(std::string_view event) {
  boost::system::error_code failed;
  const json::value fields = json::parse(sse::data_of(event), failed);
  if (failed || !fields.is_object()) return std::nullopt;
  return read_metric_fields([&](std::string_view name) -> std::optional<std::string> {
    const json::value* value = fields.get_object().if_contains(name);
    if (!value || !value->is_string()) return std::nullopt;
    return std::string(value->get_string());
  });
}

bool is_metrics_event(std::string_view event) { return sse::name_of(event) == metrics_event_name; }

}  // namespace jsonl_perf::serve
