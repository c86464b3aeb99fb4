// Per-request performance records as a serving app builds them (worker records with a
// "server" phase, disaggregated ones with "disagg", "ctx" and "gen" phases), with timings
// from a simple latency model: arrival, queueing, prefill to the first token, then
// per-token decode steps. Records are typed; jsonl::to_json_value gives the raw JSON
// record the same request makes (in an arena, or wherever the caller says).
module;

#include <cstdint>
#include <random>

export module jsonl_perf.record_builder;

export import jsonl.perf_metrics;

export namespace jsonl_perf {

class RecordBuilder {
 public:
  // `stream` tells apart builders that share a seed (say, one per producer thread);
  // `disagg_fraction` of the records are disaggregated.
  RecordBuilder(std::uint64_t seed, std::uint64_t stream, double disagg_fraction);

  // The next record, arriving at `now` (seconds on the server's steady clock).
  jsonl::perf::PerfMetricsRecord next(double now);

  // Records of one shape only.
  jsonl::perf::PerfMetricsRecord worker_record(double now);
  jsonl::perf::PerfMetricsRecord disagg_record(double now);

 private:
  struct Request {
    double arrival;
    double first_scheduled;
    double first_token;
    double last_token;
    int input_tokens;
    int output_tokens;
  };

  Request simulate(double arrival);
  jsonl::perf::PhaseMetrics phase(const Request& request, bool with_kv_transfer);
  double uniform(double low, double high);

  std::mt19937_64 random_;
  std::uint64_t stream_;
  std::uint64_t sequence_ = 0;
  double disagg_fraction_;
};

}  // namespace jsonl_perf
