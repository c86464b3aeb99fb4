// Typed performance-metrics records: the raw per-request record a C++ serving app
// submits, as structs instead of a JSON value. Each mirrors the raw record's JSON layout
// member for member (jsonl::to_json_value gives the raw record), and the typed format
// writes the same bytes the JSON path writes for that raw record.
module;

#include <boost/describe.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

export module jsonl.perf_metrics:typed_records;

export namespace jsonl::perf {

// A request id is an integer or a string; shaping converts it as Python's int() would
// and keeps it as it is when int() would fail.
using RequestId = std::variant<std::int64_t, std::string>;

// Times are seconds on the server's steady clock. An empty optional leaves its key out.
struct StepMetrics {
  std::optional<std::int64_t> iter;
  std::optional<double> forward_start_time;
  std::optional<double> forward_end_time;
  std::optional<double> sample_start_time;
  std::optional<double> sample_end_time;
  std::optional<double> gpu_forward_time;
  std::optional<double> gpu_sample_time;
};
BOOST_DESCRIBE_STRUCT(StepMetrics, (),
                      (iter, forward_start_time, forward_end_time, sample_start_time, sample_end_time,
                       gpu_forward_time, gpu_sample_time))

struct TimeBreakdownMetrics {
  std::vector<StepMetrics> step_metrics;
  std::optional<std::vector<StepMetrics>> ctx_chunk_metrics;
};
BOOST_DESCRIBE_STRUCT(TimeBreakdownMetrics, (), (step_metrics, ctx_chunk_metrics))

// A kv_cache_size of 0 (no transfer) makes shaping leave out it and the two transfer times.
struct TimingMetrics {
  std::optional<double> arrival_time;
  std::optional<double> first_scheduled_time;
  std::optional<double> first_token_time;
  std::optional<double> last_token_time;
  std::optional<double> kv_cache_transfer_start;
  std::optional<double> kv_cache_transfer_end;
  std::int64_t kv_cache_size = 0;
  std::optional<double> server_arrival_time;
  std::optional<double> server_first_token_time;
};
BOOST_DESCRIBE_STRUCT(TimingMetrics, (),
                      (arrival_time, first_scheduled_time, first_token_time, last_token_time,
                       kv_cache_transfer_start, kv_cache_transfer_end, kv_cache_size, server_arrival_time,
                       server_first_token_time))

// kv_cache_hit_rate is raw data: shaping leaves it out (it follows from the block counts).
struct KvCacheMetrics {
  std::int64_t num_total_allocated_blocks = 0;
  std::int64_t num_new_allocated_blocks = 0;
  std::int64_t num_reused_blocks = 0;
  std::int64_t num_missed_blocks = 0;
  double kv_cache_hit_rate = 0;
};
BOOST_DESCRIBE_STRUCT(KvCacheMetrics, (),
                      (num_total_allocated_blocks, num_new_allocated_blocks, num_reused_blocks, num_missed_blocks,
                       kv_cache_hit_rate))

struct SpeculativeDecodingMetrics {
  double acceptance_rate = 0;
  std::int64_t total_accepted_draft_tokens = 0;
  std::int64_t total_draft_tokens = 0;
};
BOOST_DESCRIBE_STRUCT(SpeculativeDecodingMetrics, (),
                      (acceptance_rate, total_accepted_draft_tokens, total_draft_tokens))

// One worker's view of a request: the phase "server" of a worker record, or "ctx" and
// "gen" of a disaggregated one (which carry their own request ids).
struct PhaseMetrics {
  std::optional<RequestId> request_id;
  std::optional<RequestId> ctx_request_id;
  std::optional<std::int64_t> first_iter;
  std::optional<std::int64_t> last_iter;
  std::optional<TimingMetrics> timing_metrics;
  std::optional<KvCacheMetrics> kv_cache_metrics;
  std::optional<SpeculativeDecodingMetrics> speculative_decoding;
  std::optional<TimeBreakdownMetrics> time_breakdown_metrics;
};
BOOST_DESCRIBE_STRUCT(PhaseMetrics, (),
                      (request_id, ctx_request_id, first_iter, last_iter, timing_metrics, kv_cache_metrics,
                       speculative_decoding, time_breakdown_metrics))

struct DisaggTimingMetrics {
  double server_arrival_time = 0;
  double ctx_dispatch_time = 0;
  double server_first_token_time = 0;
};
BOOST_DESCRIBE_STRUCT(DisaggTimingMetrics, (), (server_arrival_time, ctx_dispatch_time, server_first_token_time))

// The disaggregated front end's view: which servers took the request, and its times.
struct DisaggPhase {
  std::string ctx_server;
  std::string gen_server;
  DisaggTimingMetrics timing_metrics;
};
BOOST_DESCRIBE_STRUCT(DisaggPhase, (), (ctx_server, gen_server, timing_metrics))

// A worker record has `server`; a disaggregated one has `disagg` and usually `ctx` and
// `gen` (a record with neither `server` nor `disagg` is malformed: "'server'").
struct Phases {
  std::optional<PhaseMetrics> server;
  std::optional<PhaseMetrics> ctx;
  std::optional<PhaseMetrics> gen;
  std::optional<DisaggPhase> disagg;
};
BOOST_DESCRIBE_STRUCT(Phases, (), (server, ctx, gen, disagg))

struct PerfMetricsRecord {
  std::int64_t schema_version = 1;
  RequestId request_id;
  std::optional<std::string> status;  // "complete" when empty
  Phases phases;
  std::optional<RequestId> ctx_request_id;
  std::optional<RequestId> disagg_request_id;
};
BOOST_DESCRIBE_STRUCT(PerfMetricsRecord, (),
                      (schema_version, request_id, status, phases, ctx_request_id, disagg_request_id))

}  // namespace jsonl::perf
