// The reference's schema rules, read by both shaping paths (record_shape.cpp for raw JSON
// records, typed_shape.cpp for typed ones): every key name, which keys are left out when,
// and how the disaggregated record renames and nests its phases. A module implementation
// partition: nothing of it is exported.
module;

#include <algorithm>
#include <array>
#include <string_view>

module jsonl.perf_metrics:schema;

namespace jsonl::perf_schema {

// Keys of the raw record and of the shaped one.
inline constexpr std::string_view phases = "phases", server = "server", disagg = "disagg",
                                  request_id = "request_id", ctx_request_id = "ctx_request_id",
                                  status = "status", disagg_request_id = "disagg_request_id",
                                  perf_metrics = "perf_metrics", timing_metrics = "timing_metrics",
                                  first_iter = "first_iter", last_iter = "last_iter",
                                  kv_cache_metrics = "kv_cache_metrics", kv_cache_hit_rate = "kv_cache_hit_rate",
                                  speculative_decoding = "speculative_decoding",
                                  time_breakdown_metrics = "time_breakdown_metrics", ctx_server = "ctx_server",
                                  gen_server = "gen_server", kv_cache_size = "kv_cache_size";

// A record without a status is written with this one.
inline constexpr std::string_view default_status = "complete";

// timing_metrics: a falsy kv_cache_size takes these keys (itself included) with it.
inline constexpr std::array<std::string_view, 3> transfer_keys{"kv_cache_size", "kv_cache_transfer_start",
                                                               "kv_cache_transfer_end"};
constexpr bool is_transfer_key(std::string_view key) noexcept {
  return std::find(transfer_keys.begin(), transfer_keys.end(), key) != transfer_keys.end();
}

// kv_cache_metrics is written without kv_cache_hit_rate (the raw path keeps it when
// nothing else is there: the reference's copy would be empty).

// The disaggregated record: its three times, renamed, from phases.disagg.timing_metrics,
// then each worker phase present (and not empty) nested under its own key.
struct Renamed {
  std::string_view from;
  std::string_view to;
};
inline constexpr Renamed server_arrival_time{"server_arrival_time", "disagg_server_arrival_time"};
inline constexpr Renamed ctx_dispatch_time{"ctx_dispatch_time", "disagg_ctx_dispatch_time"};
inline constexpr Renamed server_first_token_time{"server_first_token_time", "disagg_server_first_token_time"};

struct NestedPhase {
  std::string_view phase;  // under "phases"
  std::string_view where;  // how errors name it
  std::string_view key;    // in the shaped record
};
inline constexpr std::array<NestedPhase, 2> nested_phases{{{"ctx", "phases.ctx", "ctx_perf_metrics"},
                                                           {"gen", "phases.gen", "gen_perf_metrics"}}};

}  // namespace jsonl::perf_schema
