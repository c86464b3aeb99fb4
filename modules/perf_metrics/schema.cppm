// The reference's schema rules (_jsonl_record, _jsonl_worker_metrics, _jsonl_perf_metrics),
// written once for both representations of a raw record: a JSON value (record_shape.cpp)
// and a typed perf::PerfMetricsRecord (typed_shape.cpp). Which keys are read, in which
// order, which are left out when, and how the disaggregated record renames and nests its
// phases are the templates below; a representation supplies a Source that reads it.
// Keys are read in the reference's order of evaluation, so the same key goes missing
// first and the same wrong type is found first.
//
// A Source reads one representation; its objects and values are its own types:
//   root()                           the record as submitted
//   object(value, where, member)     `value` as an object, else MalformedRecord naming
//                                    where it was found (`where` + `member`)
//   find(object, field)              a pointer to the field's value; null when absent
//   at(object, field)                the field's value; MissingKey(field.key) when absent
//   truthy(value), is_null(value)    Python's truth value of it; whether it is JSON null
//   int_of(request_id)               int(request_id) as the reference converts it, empty
//                                    where int() fails (throws where int() overflows)
//   for_each_member(object, visit)   visit(key, value) for each member, in order
//   write(sink, value)               the value as it came
// A Sink takes the shaped record's pieces: begin_object, key, value(boost::json::value),
// end_object, as JsonTextStream does.
//
// A module implementation partition: nothing of it is exported.
module;

#include <boost/json/value.hpp>
#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string_view>

module jsonl.perf_metrics:schema;

import :missing_key;
import :typed_records;

namespace jsonl::perf_schema {

// A key of the raw record, and the member that holds it in the typed record.
template <class Object, class Member>
struct Field {
  std::string_view key;
  Member Object::*member;
};

namespace in_record {
using perf::PerfMetricsRecord;
inline constexpr Field phases{"phases", &PerfMetricsRecord::phases};
inline constexpr Field request_id{"request_id", &PerfMetricsRecord::request_id};
inline constexpr Field ctx_request_id{"ctx_request_id", &PerfMetricsRecord::ctx_request_id};
inline constexpr Field status{"status", &PerfMetricsRecord::status};
inline constexpr Field disagg_request_id{"disagg_request_id", &PerfMetricsRecord::disagg_request_id};
}  // namespace in_record

namespace in_phases {
inline constexpr Field server{"server", &perf::Phases::server};
inline constexpr Field disagg{"disagg", &perf::Phases::disagg};
}  // namespace in_phases

namespace in_phase {
using perf::PhaseMetrics;
inline constexpr Field request_id{"request_id", &PhaseMetrics::request_id};
inline constexpr Field ctx_request_id{"ctx_request_id", &PhaseMetrics::ctx_request_id};
inline constexpr Field timing_metrics{"timing_metrics", &PhaseMetrics::timing_metrics};
inline constexpr std::array iterations{Field{"first_iter", &PhaseMetrics::first_iter},
                                       Field{"last_iter", &PhaseMetrics::last_iter}};
inline constexpr Field kv_cache_metrics{"kv_cache_metrics", &PhaseMetrics::kv_cache_metrics};
inline constexpr Field speculative_decoding{"speculative_decoding", &PhaseMetrics::speculative_decoding};
inline constexpr Field time_breakdown_metrics{"time_breakdown_metrics", &PhaseMetrics::time_breakdown_metrics};
}  // namespace in_phase

namespace in_disagg {
using perf::DisaggPhase;
inline constexpr Field timing_metrics{"timing_metrics", &DisaggPhase::timing_metrics};
inline constexpr Field ctx_server{"ctx_server", &DisaggPhase::ctx_server};
inline constexpr Field gen_server{"gen_server", &DisaggPhase::gen_server};
}  // namespace in_disagg

// Keys only the shaped record has.
inline constexpr std::string_view perf_metrics_key = "perf_metrics";

// A record without a status is written with this one.
inline constexpr std::string_view default_status = "complete";

// timing_metrics: a falsy kv_cache_size takes these keys (itself included) with it.
inline constexpr Field kv_cache_size{"kv_cache_size", &perf::TimingMetrics::kv_cache_size};
inline constexpr std::array<std::string_view, 3> transfer_keys{kv_cache_size.key, "kv_cache_transfer_start",
                                                               "kv_cache_transfer_end"};

// kv_cache_metrics is written without this key, unless nothing else is there (the
// reference's copy would be empty, and an empty copy does not replace the original).
inline constexpr std::array<std::string_view, 1> hit_rate_key{"kv_cache_hit_rate"};

// The disaggregated record: its three times, renamed, from phases.disagg.timing_metrics,
// then each worker phase present (and truthy) nested under its own key.
struct Renamed {
  Field<perf::DisaggTimingMetrics, double> from;
  std::string_view to;
};
inline constexpr std::array<Renamed, 3> disagg_times{
    {{{"server_arrival_time", &perf::DisaggTimingMetrics::server_arrival_time}, "disagg_server_arrival_time"},
     {{"ctx_dispatch_time", &perf::DisaggTimingMetrics::ctx_dispatch_time}, "disagg_ctx_dispatch_time"},
     {{"server_first_token_time", &perf::DisaggTimingMetrics::server_first_token_time},
      "disagg_server_first_token_time"}}};

struct NestedPhase {
  Field<perf::Phases, std::optional<perf::PhaseMetrics>> phase;
  std::string_view where;  // how errors name it
  std::string_view key;    // in the shaped record
};
inline constexpr std::array<NestedPhase, 2> nested_phases{
    {{{"ctx", &perf::Phases::ctx}, "phases.ctx", "ctx_perf_metrics"},
     {{"gen", &perf::Phases::gen}, "phases.gen", "gen_perf_metrics"}}};

// The reference copies dictionaries before changing them; here the changes are
// omissions made while writing.
template <class Source, class Sink, class Object>
void object_without(const Source& source, Sink& sink, const Object& object,
                    std::span<const std::string_view> omitted) {
  sink.begin_object();
  source.for_each_member(object, [&](std::string_view name, const auto& value) {
    if (std::ranges::find(omitted, name) != omitted.end()) return;
    sink.key(name);
    source.write(sink, value);
  });
  sink.end_object();
}

template <class Source, class Sink, class Phase>
void perf_metrics(const Source& source, const Phase& phase, std::string_view where, Sink& sink) {
  const auto* timing_value = source.find(phase, in_phase::timing_metrics);
  const auto* timing = timing_value ? &source.object(*timing_value, where, ".timing_metrics") : nullptr;
  sink.begin_object();
  sink.key(in_phase::timing_metrics.key);
  if (timing) {
    const auto* size = source.find(*timing, kv_cache_size);
    const bool transfer = size && source.truthy(*size);
    object_without(source, sink, *timing, transfer ? std::span<const std::string_view>() : transfer_keys);
  } else {
    sink.begin_object();
    sink.end_object();
  }
  for (const auto& iteration : in_phase::iterations) {
    if (const auto* value = source.find(phase, iteration)) {
      sink.key(iteration.key);
      source.write(sink, *value);
    }
  }
  if (const auto* value = source.find(phase, in_phase::kv_cache_metrics)) {
    const auto& kv_cache = source.object(*value, where, ".kv_cache_metrics");
    bool copy_kept = false;
    source.for_each_member(kv_cache, [&](std::string_view name, const auto&) {
      copy_kept = copy_kept || name != hit_rate_key[0];
    });
    sink.key(in_phase::kv_cache_metrics.key);
    object_without(source, sink, kv_cache, copy_kept ? hit_rate_key : std::span<const std::string_view>());
  }
  if (const auto* value = source.find(phase, in_phase::speculative_decoding)) {
    sink.key(in_phase::speculative_decoding.key);
    source.write(sink, *value);
  }
  sink.end_object();
}

// The members of _jsonl_worker_metrics' result. `phase_value` is checked to be an object
// only after request_id is converted, where the reference first calls a method on it.
template <class Source, class Sink, class Id, class Value>
void worker_metrics(const Source& source, const Id& request_id, const Id* ctx_request_id, const Value& phase_value,
                    std::string_view where, Sink& sink) {
  const std::optional<boost::json::value> converted = source.int_of(request_id);
  const auto& phase = source.object(phase_value, where);
  sink.key(in_phase::request_id.key);
  if (converted) {
    sink.value(*converted);
  } else {
    source.write(sink, request_id);
  }
  sink.key(perf_metrics_key);
  perf_metrics(source, phase, where, sink);
  if (ctx_request_id && !source.is_null(*ctx_request_id)) {
    sink.key(in_phase::ctx_request_id.key);
    source.write(sink, *ctx_request_id);
  }
  const auto* breakdown = source.find(phase, in_phase::time_breakdown_metrics);
  if (breakdown && !source.is_null(*breakdown)) {
    sink.key(in_phase::time_breakdown_metrics.key);
    source.write(sink, *breakdown);
  }
}

template <class Source, class Sink, class Record>
void status(const Source& source, const Record& record, Sink& sink) {
  static const boost::json::value complete(default_status);
  sink.key(in_record::status.key);
  if (const auto* status = source.find(record, in_record::status)) {
    source.write(sink, *status);
  } else {
    sink.value(complete);
  }
}

template <class Source, class Sink, class Record>
void disagg_request_id(const Source& source, const Record& record, Sink& sink) {
  const auto* id = source.find(record, in_record::disagg_request_id);
  if (id && !source.is_null(*id)) {
    sink.key(in_record::disagg_request_id.key);
    source.write(sink, *id);
  }
}

template <class Source, class Sink, class Record, class Phases>
void worker_record(const Source& source, const Record& record, const Phases& phases, Sink& sink) {
  const auto& server = source.at(phases, in_phases::server);
  const auto& request_id = source.at(record, in_record::request_id);
  sink.begin_object();
  worker_metrics(source, request_id, source.find(record, in_record::ctx_request_id), server, "phases.server", sink);
  status(source, record, sink);
  disagg_request_id(source, record, sink);
  sink.end_object();
}

template <class Source, class Sink, class Record, class Phases>
void disagg_record(const Source& source, const Record& record, const Phases& phases, Sink& sink) {
  const auto& disagg = source.object(source.at(phases, in_phases::disagg), "phases.disagg");
  const auto& timing_value = source.at(disagg, in_disagg::timing_metrics);
  const auto& ctx_server = source.at(disagg, in_disagg::ctx_server);
  const auto& gen_server = source.at(disagg, in_disagg::gen_server);
  const auto& timing = source.object(timing_value, "phases.disagg.timing_metrics");
  sink.begin_object();
  sink.key(in_disagg::ctx_server.key);
  source.write(sink, ctx_server);
  sink.key(in_disagg::gen_server.key);
  source.write(sink, gen_server);
  for (const Renamed& time : disagg_times) {
    const auto& value = source.at(timing, time.from);
    sink.key(time.to);
    source.write(sink, value);
  }
  status(source, record, sink);
  for (const NestedPhase& nested : nested_phases) {
    const auto* phase_value = source.find(phases, nested.phase);
    if (!phase_value || !source.truthy(*phase_value)) continue;
    const auto& phase = source.object(*phase_value, nested.where);
    // The fallback is evaluated even when the phase has its own request_id.
    const auto& fallback_id = source.at(record, in_record::request_id);
    const auto* own_id = source.find(phase, in_phase::request_id);
    sink.key(nested.key);
    sink.begin_object();
    worker_metrics(source, own_id ? *own_id : fallback_id, source.find(phase, in_phase::ctx_request_id), *phase_value,
                   nested.where, sink);
    sink.end_object();
  }
  disagg_request_id(source, record, sink);
  sink.end_object();
}

// The shaped record, in pieces to `sink`. A record without phases is read as one with
// empty phases: a worker record missing its server phase.
template <class Source, class Sink>
void shape(const Source& source, Sink& sink) {
  const auto& record = source.object(source.root(), "record");
  const auto* phases_value = source.find(record, in_record::phases);
  if (!phases_value) throw MissingKey(in_phases::server.key);
  const auto& phases = source.object(*phases_value, in_record::phases.key);
  if (source.find(phases, in_phases::disagg)) {
    disagg_record(source, record, phases, sink);
  } else {
    worker_record(source, record, phases, sink);
  }
}

}  // namespace jsonl::perf_schema
