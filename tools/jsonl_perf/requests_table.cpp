#include "requests_table.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "python_json.hpp"
#include "python_values.hpp"

namespace jsonl_perf {
namespace {

namespace json = boost::json;
using python::Value;
using python::value_at;

const std::vector<std::string> columns = {
    "rid", "trace_id", "route", "started_at", "handler_entry_at", "finished_at", "status", "stream", "model",
    "isl_total", "isl_cached", "isl_new", "osl", "cache_hit_ratio",
    "parse_ms", "proxy_dispatch_ms", "ttft_ms", "e2e_ms", "decode_ms", "prefill_queue_ms", "prefill_ms",
    "kv_transfer_ms", "kv_transfer_bytes", "gen_decode_ms", "gpu_prefill_ms",
    "ctx_first_iter", "ctx_last_iter", "gen_first_iter", "gen_last_iter",
    "ctx_blocks_total", "ctx_blocks_new", "ctx_blocks_reused", "gen_blocks_total",
    "ctx_instance", "routed_rank", "route_phase", "route_iter", "route_log_iter",
    "validation_errors", "session"};

bool is_time_column(std::string_view column) {
  return column == "started_at" || column == "handler_entry_at" || column == "finished_at";
}

Value difference_ms(std::optional<double> from, std::optional<double> to) {
  return from && to ? Value((*to - *from) * 1000.0) : Value();
}

// (ms) from `start` to `end` of a worker's timing, as the reference's span.
Value span_ms(const json::object& timing, std::string_view start, std::string_view end) {
  return difference_ms(python::to_float(python::get(timing, start)), python::to_float(python::get(timing, end)));
}

Value or_none(std::optional<double> number) { return number ? Value(*number) : Value(); }

// The usage block the client received: the line's own, a whole answer's, or the last
// a stream sent (a Responses stream's in its response.completed event). Null for none.
Value usage_of(std::string_view route, const json::object& response) {
  if (const json::object* usage = python::object_at(response, "usage")) return *usage;
  const json::object& payload = python::object_or_empty(python::get(response, "response"));
  const Value* body = payload.contains("body") ? python::get(payload, "body") : python::get(payload, "frames");
  std::string text;
  if (body && body->is_array()) {
    for (const Value& frame : body->get_array()) text += python::str(frame);
  } else if (body && body->is_object()) {
    return python::value_at(body->get_object(), "usage");
  } else if (body && body->is_string()) {
    text = body->get_string();
  } else {
    return {};
  }
  Value usage;
  for (const std::string& data : python::sse_data(text)) {
    if (data == "[DONE]") continue;
    boost::system::error_code error;
    const Value chunk = json::parse(data, error, {}, python_json_loads());
    if (error || !chunk.is_object()) continue;
    const json::object& event = chunk.get_object();
    if (route == "/v1/responses") {
      if (const Value* type = python::get(event, "type"); type && *type == "response.completed") {
        usage = python::value_at(python::object_or_empty(python::get(event, "response")), "usage");
      }
    } else if (python::truthy(python::get(event, "usage"))) {
      usage = *python::get(event, "usage");
    }
  }
  return usage;
}

// (isl_total, isl_cached, osl) from the chat shape of usage or the Responses one.
struct Tokens {
  Value total, cached, output;
};

Tokens tokens_of(const Value& usage) {
  if (!python::truthy(&usage) || !usage.is_object()) return {};
  const json::object& fields = usage.get_object();
  if (fields.contains("input_tokens")) {
    return {value_at(fields, "input_tokens"),
            value_at(python::object_or_empty(python::get(fields, "input_tokens_details")), "cached_tokens"),
            value_at(fields, "output_tokens")};
  }
  return {value_at(fields, "prompt_tokens"),
          value_at(python::object_or_empty(python::get(fields, "prompt_tokens_details")), "cached_tokens"),
          value_at(fields, "completion_tokens")};
}

bool is_number(const Value& value) { return value.is_int64() || value.is_uint64() || value.is_double(); }

// a - b, as Python subtracts two ints (or, either a float, two floats).
Value minus(const Value& a, const Value& b) {
  if (a.is_int64() && b.is_int64()) return a.get_int64() - b.get_int64();
  return *python::to_float(&a) - *python::to_float(&b);
}

// A perf record's hop, 'proxy', 'ctx' or 'gen': from its file's name where the name
// says it, else from its fields.
std::string_view perf_role(const PerfRecordLine& line) {
  const json::object& record = line.record->get_object();
  std::string_view stem = line.file_name;
  if (const std::size_t dot = stem.rfind('.'); dot != std::string_view::npos) stem = stem.substr(0, dot);
  std::string_view token;
  if (const std::size_t dash = stem.find('-'); dash != std::string_view::npos) {
    token = stem.substr(dash + 1);
    token = token.substr(0, token.find('-'));
  }
  if (token == "disagg" || token == "proxy" || record.contains("ctx_perf_metrics") ||
      record.contains("gen_perf_metrics")) {
    return "proxy";
  }
  if (token == "ctx" || token == "gen") return token;
  const json::object& timing =
      python::object_or_empty(python::get(python::object_or_empty(python::get(record, "perf_metrics")), "timing_metrics"));
  return timing.contains("kv_cache_transfer_start") ? "gen" : "ctx";
}

struct Hops {
  const json::object* proxy = nullptr;
  const json::object* ctx = nullptr;
  const json::object* gen = nullptr;
};

// rid (a record's disagg_request_id, else its ctx_request_id, else its request_id, the
// first that is truthy) -> its hops' records, a later record of a hop over an earlier.
std::unordered_map<std::string, Hops> perf_by_rid(const std::vector<PerfRecordLine>& records) {
  std::unordered_map<std::string, Hops> hops;
  for (const PerfRecordLine& line : records) {
    if (!line.record->is_object()) continue;
    const json::object& record = line.record->get_object();
    const Value* rid = nullptr;
    for (const std::string_view key : {"disagg_request_id", "ctx_request_id", "request_id"}) {
      if (python::truthy(python::get(record, key))) {
        rid = python::get(record, key);
        break;
      }
    }
    if (!rid) rid = python::get(record, "request_id");
    if (!rid || rid->is_null()) continue;
    Hops& hop = hops[python::str(*rid)];
    const std::string_view role = perf_role(line);
    (role == "proxy" ? hop.proxy : role == "ctx" ? hop.ctx : hop.gen) = &record;
  }
  return hops;
}

// The validation errors briefed as the reference briefs them: "loc: msg" each, joined
// with " | ", at most 300 characters.
Value brief(const Value* errors) {
  if (!python::truthy(errors)) return {};
  std::vector<const Value*> items;
  if (errors->is_array()) {
    for (const Value& error : errors->get_array()) items.push_back(&error);
  } else {
    items.push_back(errors);
  }
  std::string joined;
  for (const Value* error : items) {
    if (error != items.front()) joined += " | ";
    if (!error->is_object()) {
      joined += python::str(*error);
      continue;
    }
    const json::object& fields = error->get_object();
    const Value* loc = python::get(fields, "loc");
    const Value* message = fields.contains("msg") ? python::get(fields, "msg") : python::get(fields, "message");
    std::string part = (loc ? python::str(*loc) : std::string()) + ": " + (message ? python::str(*message) : std::string());
    const std::size_t first = part.find_first_not_of(": ");
    part = first == std::string::npos ? std::string() : part.substr(first, part.find_last_not_of(": ") - first + 1);
    joined += part;
  }
  // At most 300 code points: a UTF-8 sequence's continuation bytes are not counted.
  std::size_t points = 0, at = 0;
  for (; at < joined.size(); ++at) {
    if ((static_cast<unsigned char>(joined[at]) & 0xC0) != 0x80 && points++ == 300) break;
  }
  return Value(joined.substr(0, at));
}

struct Row {
  std::optional<double> started;
  std::string rid_key;  // str(rid), the second sort key
  std::vector<Value> values;
  std::size_t order = 0;  // its request line's place: a stable sort's last key
};

Row request_row(const json::object& request, const json::object* response, const Hops& hops,
                std::optional<double> offset) {
  const json::object& body = python::object_or_empty(python::get(request, "body"));
  const json::object empty;
  const json::object& answer = response ? *response : empty;
  const std::optional<double> handler_entry = python::parse_iso(python::get(request, "recorded_at"));
  const std::optional<double> arrival = python::to_float(python::get(request, "server_arrival_time"));
  const std::optional<double> started = arrival && offset ? std::optional(*arrival + *offset) : handler_entry;
  const std::optional<double> finished = python::parse_iso(python::get(answer, "finished_at"));
  const Value* route = python::get(request, "route");
  const Tokens tokens = response ? tokens_of(usage_of(route && route->is_string() ? std::string_view(route->get_string()) : "", *response))
                                 : Tokens{};
  const Value isl_new = is_number(tokens.total) && is_number(tokens.cached) ? minus(tokens.total, tokens.cached) : Value();
  const Value hit_ratio = python::truthy(&tokens.total) && is_number(tokens.cached)
                              ? Value(*python::to_float(&tokens.cached) / *python::to_float(&tokens.total))
                              : Value();

  const json::object& proxy = hops.proxy ? *hops.proxy : empty;
  const json::object& ctx = hops.ctx ? *hops.ctx : empty;
  const json::object& gen = hops.gen ? *hops.gen : empty;
  const json::object& ctx_perf = python::object_or_empty(python::get(ctx, "perf_metrics"));
  const json::object& gen_perf = python::object_or_empty(python::get(gen, "perf_metrics"));
  const json::object& ctx_timing = python::object_or_empty(python::get(ctx_perf, "timing_metrics"));
  const json::object& gen_timing = python::object_or_empty(python::get(gen_perf, "timing_metrics"));
  const json::object& ctx_kv = python::object_or_empty(python::get(ctx_perf, "kv_cache_metrics"));
  const json::object& gen_kv = python::object_or_empty(python::get(gen_perf, "kv_cache_metrics"));
  const json::object& ctx_breakdown = python::object_or_empty(python::get(ctx, "time_breakdown_metrics"));

  const std::optional<double> proxy_arrival = python::to_float(python::get(proxy, "disagg_server_arrival_time"));
  const std::optional<double> first_token = python::to_float(python::get(proxy, "disagg_server_first_token_time"));
  const std::optional<double> dispatch = python::to_float(python::get(proxy, "disagg_ctx_dispatch_time"));
  Value ttft = difference_ms(proxy_arrival, first_token);
  if (ttft.is_null()) ttft = span_ms(ctx_timing, "server_arrival_time", "server_first_token_time");
  const Value e2e = difference_ms(started, finished);

  const Value* status = python::get(request, "status");
  Value row_status = "rejected_400";
  if (!status || *status != "rejected_400") {
    const Value* outcome = python::get(answer, "status");
    row_status = python::truthy(outcome) ? *outcome : Value("no_response");
  }
  const Value rid = value_at(answer, "disagg_request_id");
  return {started, python::str(rid),
          {rid, value_at(request, "trace_id"), value_at(request, "route"), or_none(started), or_none(handler_entry),
           or_none(finished), row_status, value_at(body, "stream"), value_at(body, "model"),
           tokens.total, tokens.cached, isl_new, tokens.output, hit_ratio,
           difference_ms(started, handler_entry), difference_ms(proxy_arrival, dispatch), ttft, e2e,
           e2e.is_null() || ttft.is_null() ? Value() : Value(e2e.get_double() - ttft.get_double()),
           span_ms(ctx_timing, "arrival_time", "first_scheduled_time"),
           span_ms(ctx_timing, "first_scheduled_time", "first_token_time"),
           span_ms(gen_timing, "kv_cache_transfer_start", "kv_cache_transfer_end"), value_at(gen_timing, "kv_cache_size"),
           span_ms(gen_timing, "first_token_time", "last_token_time"),
           or_none(python::to_float(python::get(ctx_breakdown, "ctx_gpu_forward_time"))),
           value_at(ctx_perf, "first_iter"), value_at(ctx_perf, "last_iter"), value_at(gen_perf, "first_iter"),
           value_at(gen_perf, "last_iter"), value_at(ctx_kv, "num_total_allocated_blocks"),
           value_at(ctx_kv, "num_new_allocated_blocks"), value_at(ctx_kv, "num_reused_blocks"),
           value_at(gen_kv, "num_total_allocated_blocks"), Value(), Value(), Value(), Value(), Value(),
           brief(python::get(request, "validation_errors")), value_at(request, "session")}};
}

}  // namespace

const std::vector<std::string>& requests_table_columns() { return columns; }

RequestsTable requests_table(const std::vector<json::value>& request_lines,
                             const std::vector<json::value>& response_lines,
                             const std::vector<PerfRecordLine>& perf_records) {
  // trace_id -> line: a later line of a trace_id over an earlier, in the earlier's place.
  std::vector<const json::object*> requests;
  std::unordered_map<std::string, std::size_t> request_at;
  std::unordered_map<std::string, const json::object*> responses;
  std::optional<double> offset;
  for (const json::value& line : request_lines) {
    if (!line.is_object()) continue;
    const json::object& request = line.get_object();
    const std::string trace_id = python::str(python::value_at(request, "trace_id"));
    if (const auto [at, first] = request_at.try_emplace(trace_id, requests.size()); first) {
      requests.push_back(&request);
    } else {
      requests[at->second] = &request;
    }
    // The wall clock less the steady clock: the least delayed request line pins it.
    const std::optional<double> stamp = python::parse_iso(python::get(request, "recorded_at"));
    const Value* arrival = python::get(request, "server_arrival_time");
    if (stamp && arrival && is_number(*arrival)) {
      const double line_offset = *stamp - *python::to_float(arrival);
      offset = std::min(offset.value_or(line_offset), line_offset);
    }
  }
  for (const json::value& line : response_lines) {
    if (!line.is_object()) continue;
    responses[python::str(python::value_at(line.get_object(), "trace_id"))] = &line.get_object();
  }
  const std::unordered_map<std::string, Hops> hops = perf_by_rid(perf_records);
  std::vector<Row> rows;
  for (const json::object* request : requests) {
    const auto found = responses.find(python::str(python::value_at(*request, "trace_id")));
    const json::object* response = found == responses.end() ? nullptr : found->second;
    const Value* rid = response ? python::get(*response, "disagg_request_id") : nullptr;
    const auto joined = rid && !rid->is_null() ? hops.find(python::str(*rid)) : hops.end();
    rows.push_back(request_row(*request, response, joined == hops.end() ? Hops{} : joined->second, offset));
    rows.back().order = rows.size();
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    const double a_start = a.started.value_or(0), b_start = b.started.value_or(0);
    if (a_start != b_start) return a_start < b_start;
    return a.rid_key != b.rid_key ? a.rid_key < b.rid_key : a.order < b.order;
  });
  RequestsTable table{.csv = python::csv_row(columns)};
  for (Row& row : rows) {
    std::vector<std::string> fields;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const Value& value = row.values[i];
      fields.push_back(is_time_column(columns[i])
                           ? python::utc_iso(value.is_null() ? std::nullopt : std::optional(value.get_double()))
                           : python::cell(value));
    }
    table.csv += python::csv_row(fields);
    table.rows.push_back(std::move(row.values));
  }
  return table;
}

}  // namespace jsonl_perf
