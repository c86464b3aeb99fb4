#include "record_builder.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace jsonl_perf {
namespace {

constexpr int tokens_per_block = 32;
constexpr int recorded_steps = 8;  // step metrics kept per request

}  // namespace

RecordBuilder::RecordBuilder(std::uint64_t seed, std::uint64_t stream, double disagg_fraction)
    : random_(seed * 0x9E3779B97F4A7C15ull + stream), stream_(stream), disagg_fraction_(disagg_fraction) {}

double RecordBuilder::uniform(double low, double high) {
  return std::uniform_real_distribution<double>(low, high)(random_);
}

RecordBuilder::Request RecordBuilder::simulate(double arrival) {
  Request request;
  request.arrival = arrival;
  request.input_tokens = std::uniform_int_distribution<int>(64, 2048)(random_);
  request.output_tokens = std::uniform_int_distribution<int>(16, 512)(random_);
  const double queueing = std::exponential_distribution<double>(1.0 / 0.002)(random_);
  const double prefill = request.input_tokens * 25e-6 * uniform(0.8, 1.2);
  const double step = 0.008 * uniform(0.9, 1.3);
  request.first_scheduled = arrival + queueing;
  request.first_token = request.first_scheduled + prefill;
  request.last_token = request.first_token + (request.output_tokens - 1) * step;
  return request;
}

boost::json::object RecordBuilder::phase(const Request& request, bool with_kv_transfer) {
  namespace json = boost::json;
  const int total_blocks = (request.input_tokens + request.output_tokens + tokens_per_block - 1) / tokens_per_block;
  const int reused = std::uniform_int_distribution<int>(0, request.input_tokens / tokens_per_block)(random_);
  const int first_iter = std::uniform_int_distribution<int>(0, 1 << 20)(random_);

  json::object timing{{"arrival_time", request.arrival},
                      {"first_scheduled_time", request.first_scheduled},
                      {"first_token_time", request.first_token},
                      {"last_token_time", request.last_token}};
  if (with_kv_transfer) {
    timing["kv_cache_transfer_start"] = request.first_token + 0.0001;
    timing["kv_cache_transfer_end"] = request.first_token + 0.0001 + total_blocks * 2e-6;
    timing["kv_cache_size"] = std::int64_t{total_blocks} * 65536;
  } else {
    timing["kv_cache_transfer_start"] = nullptr;
    timing["kv_cache_transfer_end"] = nullptr;
    timing["kv_cache_size"] = 0;
  }
  timing["server_arrival_time"] = request.arrival - 0.0002;
  timing["server_first_token_time"] = request.first_token + 0.0001;

  json::array steps;
  const double step = request.output_tokens > 1
                          ? (request.last_token - request.first_token) / (request.output_tokens - 1)
                          : 0.0;
  for (int i = 0; i < std::min(recorded_steps, request.output_tokens); ++i) {
    const double start = request.first_token + i * step;
    steps.push_back(json::object{{"iter", first_iter + i},
                                 {"forward_start_time", start},
                                 {"forward_end_time", start + step * 0.7},
                                 {"sample_start_time", start + step * 0.72},
                                 {"sample_end_time", start + step * 0.8}});
  }
  return json::object{
      {"first_iter", first_iter},
      {"last_iter", first_iter + request.output_tokens},
      {"timing_metrics", std::move(timing)},
      {"kv_cache_metrics", json::object{{"num_total_allocated_blocks", total_blocks},
                                        {"num_new_allocated_blocks", total_blocks - reused},
                                        {"num_reused_blocks", reused},
                                        {"num_missed_blocks", total_blocks - reused},
                                        {"kv_cache_hit_rate", double(reused) / total_blocks}}},
      {"time_breakdown_metrics", json::object{{"step_metrics", std::move(steps)}}}};
}

boost::json::value RecordBuilder::worker_record(double now) {
  namespace json = boost::json;
  const Request request = simulate(now);
  const std::uint64_t id = stream_ * 1'000'000'000ull + ++sequence_;
  return json::object{{"schema_version", 1},
                      {"request_id", std::to_string(id)},
                      {"status", "complete"},
                      {"phases", json::object{{"server", phase(request, false)}}},
                      {"streaming", (id & 1) == 0},
                      {"metrics_headers", json::object{}}};
}

boost::json::value RecordBuilder::disagg_record(double now) {
  namespace json = boost::json;
  const std::uint64_t id = stream_ * 1'000'000'000ull + ++sequence_;
  const double dispatch = now + uniform(0.0002, 0.001);
  const Request context = simulate(dispatch);
  Request generation = simulate(context.first_token + 0.0005);
  json::object ctx = phase(context, true);
  ctx["request_id"] = std::to_string(id);
  ctx["ctx_request_id"] = id;
  json::object gen = phase(generation, false);
  gen["request_id"] = std::to_string(id + 500'000'000ull);
  gen["ctx_request_id"] = id;
  const int server = std::uniform_int_distribution<int>(0, 3)(random_);
  return json::object{
      {"schema_version", 1},
      {"request_id", "disagg-" + std::to_string(id)},
      {"status", "complete"},
      {"phases", json::object{{"disagg", json::object{{"ctx_server", "ctx-" + std::to_string(server) + ":8001"},
                                                      {"gen_server", "gen-" + std::to_string(server) + ":8002"},
                                                      {"timing_metrics",
                                                       json::object{{"server_arrival_time", now},
                                                                    {"ctx_dispatch_time", dispatch},
                                                                    {"server_first_token_time",
                                                                     generation.first_token + 0.0002}}}}},
                              {"ctx", std::move(ctx)},
                              {"gen", std::move(gen)}}},
      {"disagg_request_id", id}};
}

boost::json::value RecordBuilder::next(double now) {
  return uniform(0.0, 1.0) < disagg_fraction_ ? disagg_record(now) : worker_record(now);
}

}  // namespace jsonl_perf
