// The reference's shaping (record_shape.cpp) applied to a typed record: the same keys in
// the same order, written straight from the structs. Where the JSON path checks a key's
// presence, the typed one checks the optional that stands for it; a typed record cannot
// be wrong in type, so its only shaping error is a record with neither phase.
module;

#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

module jsonl.perf_metrics;

import :python_int;
import :typed_records;
import :schema;

namespace jsonl {
namespace {

using namespace perf;
namespace key = perf_schema;

// request_id as int() converts it, else as it is.
void request_id(JsonTextStream& out, const RequestId& id) {
  if (const auto* number = std::get_if<std::int64_t>(&id)) {
    out.integer(*number);
  } else if (const std::optional<boost::json::value> converted = python_int(std::get<std::string>(id))) {
    out.value(*converted);
  } else {
    out.string(std::get<std::string>(id));
  }
}

// A described struct's members as an object, less the one named `omitted`.
template <class T>
void object_without(JsonTextStream& out, const T& value, std::string_view omitted) {
  out.begin_object();
  for_each_member(value, [&](std::string_view name, const auto& field) {
    if (name == omitted || leaves_key_out(field)) return;
    out.key(name);
    write_json(out, field);
  });
  out.end_object();
}

void timing_metrics(JsonTextStream& out, const std::optional<TimingMetrics>& timing) {
  out.begin_object();
  if (timing) {
    // A falsy kv_cache_size takes the transfer times with it.
    const bool transfer = timing->kv_cache_size != 0;
    for_each_member(*timing, [&](std::string_view name, const auto& field) {
      if (leaves_key_out(field)) return;
      if (!transfer && key::is_transfer_key(name)) return;
      out.key(name);
      write_json(out, field);
    });
  }
  out.end_object();
}

void perf_metrics(JsonTextStream& out, const PhaseMetrics& phase) {
  out.begin_object();
  out.key(key::timing_metrics);
  timing_metrics(out, phase.timing_metrics);
  if (phase.first_iter) {
    out.key(key::first_iter);
    out.integer(*phase.first_iter);
  }
  if (phase.last_iter) {
    out.key(key::last_iter);
    out.integer(*phase.last_iter);
  }
  if (phase.kv_cache_metrics) {
    out.key(key::kv_cache_metrics);
    object_without(out, *phase.kv_cache_metrics, key::kv_cache_hit_rate);
  }
  if (phase.speculative_decoding) {
    out.key(key::speculative_decoding);
    write_json(out, *phase.speculative_decoding);
  }
  out.end_object();
}

void worker_metrics(JsonTextStream& out, const RequestId& id, const std::optional<RequestId>& ctx_request_id,
                    const PhaseMetrics& phase) {
  out.key(key::request_id);
  request_id(out, id);
  out.key(key::perf_metrics);
  perf_metrics(out, phase);
  if (ctx_request_id) {
    out.key(key::ctx_request_id);
    write_json(out, *ctx_request_id);
  }
  if (phase.time_breakdown_metrics) {
    out.key(key::time_breakdown_metrics);
    write_json(out, *phase.time_breakdown_metrics);
  }
}

void status(JsonTextStream& out, const PerfMetricsRecord& record) {
  out.key(key::status);
  out.string(record.status ? std::string_view(*record.status) : key::default_status);
}

void disagg_request_id(JsonTextStream& out, const PerfMetricsRecord& record) {
  if (record.disagg_request_id) {
    out.key(key::disagg_request_id);
    write_json(out, *record.disagg_request_id);
  }
}

void worker_record(JsonTextStream& out, const PerfMetricsRecord& record) {
  if (!record.phases.server) throw MissingKey(key::server);
  out.begin_object();
  worker_metrics(out, record.request_id, record.ctx_request_id, *record.phases.server);
  status(out, record);
  disagg_request_id(out, record);
  out.end_object();
}

void disagg_record(JsonTextStream& out, const PerfMetricsRecord& record) {
  const DisaggPhase& disagg = *record.phases.disagg;
  out.begin_object();
  out.key(key::ctx_server);
  out.string(disagg.ctx_server);
  out.key(key::gen_server);
  out.string(disagg.gen_server);
  out.key(key::server_arrival_time.to);
  out.floating(disagg.timing_metrics.server_arrival_time);
  out.key(key::ctx_dispatch_time.to);
  out.floating(disagg.timing_metrics.ctx_dispatch_time);
  out.key(key::server_first_token_time.to);
  out.floating(disagg.timing_metrics.server_first_token_time);
  status(out, record);
  const std::optional<PhaseMetrics>* nested[] = {&record.phases.ctx, &record.phases.gen};
  for (std::size_t i = 0; i < key::nested_phases.size(); ++i) {
    const std::optional<PhaseMetrics>* phase = nested[i];
    if (!*phase || is_empty_object(**phase)) continue;  // an empty phase is falsy
    out.key(key::nested_phases[i].key);
    out.begin_object();
    worker_metrics(out, (*phase)->request_id ? *(*phase)->request_id : record.request_id, (*phase)->ctx_request_id,
                   **phase);
    out.end_object();
  }
  disagg_request_id(out, record);
  out.end_object();
}

}  // namespace

bool PerfMetricsTypedFormat::append_line(perf::PerfMetricsRecord& record, std::string& out) const {
  bool sanitized;
  {
    JsonTextStream stream(out);
    if (record.phases.disagg) {
      disagg_record(stream, record);
    } else {
      worker_record(stream, record);
    }
    sanitized = stream.sanitized();
  }
  out += '\n';
  return sanitized;
}

}  // namespace jsonl
