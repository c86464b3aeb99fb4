module;

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>

module jsonl_perf.record_builder;

namespace jsonl_perf {
namespace {

namespace perf = jsonl::perf;

constexpr int tokens_per_block = 32;
constexpr int recorded_steps = 8;  // step metrics kept per request

}  // namespace

RecordBuilder::RecordBuilder(std::uint64_t seed, std::uint64_t stream, double disagg_fraction)
    : random_(seed * 0x9E3779B97F4A7C15ull + stream), stream_(stream), disagg_fraction_(disagg_fraction) {}

// The top 53 bits of one draw, as a double in [0, 1). (libstdc++'s
// generate_canonical, behind its real distributions, takes two long-double logarithms
// a call: a quarter of a loaded generator's time.)
double RecordBuilder::uniform(double low, double high) {
  return low + (high - low) * (static_cast<double>(random_() >> 11) * 0x1p-53);
}

RecordBuilder::Request RecordBuilder::simulate(double arrival) {
  Request request;
  request.arrival = arrival;
  request.input_tokens = std::uniform_int_distribution<int>(64, 2048)(random_);
  request.output_tokens = std::uniform_int_distribution<int>(16, 512)(random_);
  const double queueing = -0.002 * std::log1p(-uniform(0.0, 1.0));  // exponential, mean 2 ms
  const double prefill = request.input_tokens * 25e-6 * uniform(0.8, 1.2);
  const double step = 0.008 * uniform(0.9, 1.3);
  request.first_scheduled = arrival + queueing;
  request.first_token = request.first_scheduled + prefill;
  request.last_token = request.first_token + (request.output_tokens - 1) * step;
  return request;
}

jsonl::perf::PhaseMetrics RecordBuilder::phase(const Request& request, bool with_kv_transfer) {
  const int total_blocks = (request.input_tokens + request.output_tokens + tokens_per_block - 1) / tokens_per_block;
  const int reused = std::uniform_int_distribution<int>(0, request.input_tokens / tokens_per_block)(random_);
  const int first_iter = std::uniform_int_distribution<int>(0, 1 << 20)(random_);

  perf::TimingMetrics timing{.arrival_time = request.arrival,
                             .first_scheduled_time = request.first_scheduled,
                             .first_token_time = request.first_token,
                             .last_token_time = request.last_token,
                             .server_arrival_time = request.arrival - 0.0002,
                             .server_first_token_time = request.first_token + 0.0001};
  if (with_kv_transfer) {
    timing.kv_cache_transfer_start = request.first_token + 0.0001;
    timing.kv_cache_transfer_end = request.first_token + 0.0001 + total_blocks * 2e-6;
    timing.kv_cache_size = std::int64_t{total_blocks} * 65536;
  }

  perf::TimeBreakdownMetrics breakdown;
  const double step = request.output_tokens > 1
                          ? (request.last_token - request.first_token) / (request.output_tokens - 1)
                          : 0.0;
  const int steps = std::min(recorded_steps, request.output_tokens);
  breakdown.step_metrics.reserve(steps);
  for (int i = 0; i < steps; ++i) {
    const double start = request.first_token + i * step;
    breakdown.step_metrics.push_back({.iter = first_iter + i,
                                      .forward_start_time = start,
                                      .forward_end_time = start + step * 0.7,
                                      .sample_start_time = start + step * 0.72,
                                      .sample_end_time = start + step * 0.8});
  }
  return {.first_iter = first_iter,
          .last_iter = first_iter + request.output_tokens,
          .timing_metrics = timing,
          .kv_cache_metrics = perf::KvCacheMetrics{.num_total_allocated_blocks = total_blocks,
                                                   .num_new_allocated_blocks = total_blocks - reused,
                                                   .num_reused_blocks = reused,
                                                   .num_missed_blocks = total_blocks - reused,
                                                   .kv_cache_hit_rate = double(reused) / total_blocks},
          .time_breakdown_metrics = std::move(breakdown)};
}

jsonl::perf::PerfMetricsRecord RecordBuilder::worker_record(double now) {
  const Request request = simulate(now);
  const std::uint64_t id = stream_ * 1'000'000'000ull + ++sequence_;
  return {.request_id = std::to_string(id), .status = "complete", .phases = {.server = phase(request, false)}};
}

jsonl::perf::PerfMetricsRecord RecordBuilder::disagg_record(double now) {
  const auto id = static_cast<std::int64_t>(stream_ * 1'000'000'000ull + ++sequence_);
  const double dispatch = now + uniform(0.0002, 0.001);
  const Request context = simulate(dispatch);
  Request generation = simulate(context.first_token + 0.0005);
  perf::PhaseMetrics ctx = phase(context, true);
  ctx.request_id = std::to_string(id);
  ctx.ctx_request_id = id;
  perf::PhaseMetrics gen = phase(generation, false);
  gen.request_id = std::to_string(id + 500'000'000);
  gen.ctx_request_id = id;
  const int server = std::uniform_int_distribution<int>(0, 3)(random_);
  return {.request_id = "disagg-" + std::to_string(id),
          .status = "complete",
          .phases = {.ctx = std::move(ctx),
                     .gen = std::move(gen),
                     .disagg = perf::DisaggPhase{.ctx_server = "ctx-" + std::to_string(server) + ":8001",
                                                 .gen_server = "gen-" + std::to_string(server) + ":8002",
                                                 .timing_metrics = {.server_arrival_time = now,
                                                                    .ctx_dispatch_time = dispatch,
                                                                    .server_first_token_time =
                                                                        generation.first_token + 0.0002}}},
          .disagg_request_id = id};
}

jsonl::perf::PerfMetricsRecord RecordBuilder::next(double now) {
  return uniform(0.0, 1.0) < disagg_fraction_ ? disagg_record(now) : worker_record(now);
}

}  // namespace jsonl_perf
