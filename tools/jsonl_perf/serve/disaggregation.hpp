// What a disaggregated deployment's proxy and workers tell each other, as the reference's
// do: a request body's `disaggregated_params` (which hop a worker runs, and the ids that
// join the hops), and a worker's per-request metrics, returned in response fields
// (`Server-Timing`, `X-TRTLLM-Start-End-Time`) or, for a stream, in a
// `trtllm.perf_metrics` event after `[DONE]`, when the request carries
// `X-TRTLLM-return-metrics: 1`.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "recording.hpp"



namespace jsonl_perf::serve {

inline constexpr std::string_view return_metrics_field = "X-TRTLLM-return-metrics";
inline constexpr std::string_view server_timing_field = "Server-Timing";
inline constexpr std::string_view start_end_time_field = "X-TRTLLM-Start-End-Time";
inline constexpr std::string_view metrics_event_name = "trtllm.perf_metrics";

enum class HopType { context_only, generation_only, context_and_generation };

struct DisaggregatedParams {
  HopType request_type = HopType::context_and_generation;
  std::optional<std::int64_t> disagg_request_id;
  std::optional<std::int64_t> ctx_request_id;
  boost::json::array first_gen_tokens;
};

// The body's disaggregated_params, if it has them; what is wrong with them is appended to
// `errors` in the validation errors' shape.
std::optional<DisaggregatedParams> read_disaggregated_params(const boost::json::object& body, boost::json::array& errors);

// The params as a body carries them: `request_type` and the ids set.
boost::json::object params_json(const DisaggregatedParams& params);

// A worker's times of one request, on the proxy's clock (offset applied).
struct WorkerTimes {
  double arrival_time = 0;
  double first_scheduled_time = 0;
  std::optional<double> first_token_time;
  std::optional<double> last_token_time;
  std::optional<double> kv_cache_transfer_start;
  std::optional<double> kv_cache_transfer_end;
};

using MetricFields = std::vector<std::pair<std::string, std::string>>;

// The two fields a worker returns: durations in ms (server_queue, server_ttft,
// server_e2e, server_kv_transfer), and the request's start and end times.
MetricFields metric_fields(const WorkerTimes& times);
// The same fields as the event a stream ends with (after [DONE]).
std::string metrics_event(const MetricFields& fields);

// What a proxy reads back from a worker's fields (looked up by name, case-insensitive;
// empty when absent): the hop's times, or nothing when the worker sent none.
std::optional<jsonl::recording::HopTimes> read_metric_fields(
    const std::function<std::optional<std::string>(std::string_view)>& field);
// The fields of a metrics event's data (`{"Server-Timing": ..., ...}`).
std::optional<jsonl::recording::HopTimes> read_metrics_event(std::string_view event);

// Whether one whole server-sent event (without its blank line) is the metrics event.
bool is_metrics_event(std::string_view event);

}  // namespace jsonl_perf::serve
