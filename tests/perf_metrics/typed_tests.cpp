// Typed performance-metrics records: the typed format writes, byte for byte, what the
// JSON path writes for the raw record the typed one stands for (jsonl::to_json_value).
// A hand-written case per shaping rule, then a seeded property test over random records.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"

import jsonl.perf_metrics;

namespace json = boost::json;
namespace perf = jsonl::perf;

namespace {

// The line a format writes for `record`, without its '\n', or "throws: <what>".
template <class Format, class Record>
std::string line_of(Record record) {
  std::string line;
  try {
    Format().append_line(record, line);
  } catch (const std::exception& error) {
    return std::string("throws: ") + error.what();
  }
  return line.substr(0, line.size() - 1);
}

std::string typed_line(const perf::PerfMetricsRecord& record) {
  return line_of<jsonl::PerfMetricsTypedFormat>(record);
}

// What the JSON path writes for the raw record `record` stands for.
std::string json_line(const perf::PerfMetricsRecord& record) {
  return line_of<jsonl::PerfMetricsFormat>(jsonl::to_json_value(record));
}

perf::PhaseMetrics phase() {
  return {.first_iter = 10,
          .last_iter = 20,
          .timing_metrics = perf::TimingMetrics{.arrival_time = 1.0,
                                                .first_scheduled_time = 1.25,
                                                .first_token_time = 1.5,
                                                .last_token_time = 2.0,
                                                .kv_cache_transfer_start = 1.5,
                                                .kv_cache_transfer_end = 1.75,
                                                .kv_cache_size = 4096},
          .kv_cache_metrics = perf::KvCacheMetrics{.num_total_allocated_blocks = 8,
                                                   .num_new_allocated_blocks = 6,
                                                   .num_reused_blocks = 2,
                                                   .num_missed_blocks = 6,
                                                   .kv_cache_hit_rate = 0.25},
          .time_breakdown_metrics = perf::TimeBreakdownMetrics{
              .step_metrics = {{.iter = 10, .forward_start_time = 1.5, .forward_end_time = 1.625}}}};
}

perf::PerfMetricsRecord worker(perf::PhaseMetrics server = phase()) {
  return {.request_id = std::string("42"), .phases = {.server = std::move(server)}};
}

// The typed line, checked against the JSON path's for the same record.
std::string checked(const perf::PerfMetricsRecord& record) {
  const std::string line = typed_line(record);
  BOOST_TEST(line == json_line(record), "the typed and the JSON path agree on " << json::serialize(jsonl::to_json_value(record)));
  return line;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(typed_records)

BOOST_AUTO_TEST_CASE(a_worker_record_is_shaped_in_the_references_key_order) {
  BOOST_TEST(checked(worker()) ==
             R"({"request_id":42,"perf_metrics":{"timing_metrics":{"arrival_time":1.0,"first_scheduled_time":1.25,)"
             R"("first_token_time":1.5,"last_token_time":2.0,"kv_cache_transfer_start":1.5,"kv_cache_transfer_end":1.75,)"
             R"("kv_cache_size":4096},"first_iter":10,"last_iter":20,"kv_cache_metrics":{"num_total_allocated_blocks":8,)"
             R"("num_new_allocated_blocks":6,"num_reused_blocks":2,"num_missed_blocks":6}},)"
             R"("time_breakdown_metrics":{"step_metrics":[{"iter":10,"forward_start_time":1.5,"forward_end_time":1.625}]},)"
             R"("status":"complete"})");
}

BOOST_AUTO_TEST_CASE(the_status_defaults_to_complete_and_a_given_one_is_kept) {
  perf::PerfMetricsRecord record = worker();
  BOOST_TEST(jsonl_test::contains(checked(record), R"("status":"complete")"));
  record.status = "error";
  BOOST_TEST(jsonl_test::contains(checked(record), R"("status":"error")"));
}

BOOST_AUTO_TEST_CASE(a_falsy_kv_cache_size_removes_it_and_both_transfer_times) {
  perf::PhaseMetrics server = phase();
  server.timing_metrics->kv_cache_size = 0;
  const std::string line = checked(worker(server));
  BOOST_TEST(jsonl_test::contains(line, R"("timing_metrics":{"arrival_time":1.0,"first_scheduled_time":1.25,)"
                                        R"("first_token_time":1.5,"last_token_time":2.0},)"));
}

BOOST_AUTO_TEST_CASE(the_kv_cache_hit_rate_is_removed_and_a_nan_one_costs_nothing) {
  perf::PhaseMetrics server = phase();
  server.kv_cache_metrics->kv_cache_hit_rate = std::nan("");
  const std::string line = checked(worker(server));
  BOOST_TEST(!jsonl_test::contains(line, "kv_cache_hit_rate"));
}

BOOST_AUTO_TEST_CASE(a_phase_without_timing_metrics_gets_an_empty_object) {
  perf::PhaseMetrics server;
  BOOST_TEST(checked(worker(server)) == R"({"request_id":42,"perf_metrics":{"timing_metrics":{}},"status":"complete"})");
}

BOOST_AUTO_TEST_CASE(request_ids_are_converted_as_pythons_int_does) {
  perf::PerfMetricsRecord record = worker(perf::PhaseMetrics{});
  const auto id_in = [&](perf::RequestId id) {
    record.request_id = std::move(id);
    const std::string line = checked(record);
    return line.substr(0, line.find(",\"perf_metrics\""));
  };
  BOOST_TEST(id_in(std::string(" 1_000 ")) == R"({"request_id":1000)");
  BOOST_TEST(id_in(std::int64_t{-7}) == R"({"request_id":-7)");
  BOOST_TEST(id_in(std::string("chatcmpl-9")) == R"({"request_id":"chatcmpl-9")");
  BOOST_TEST(id_in(std::string("99999999999999999999999")) == R"({"request_id":"99999999999999999999999")");
}

BOOST_AUTO_TEST_CASE(ctx_and_disagg_request_ids_are_written_when_given) {
  perf::PerfMetricsRecord record = worker(perf::PhaseMetrics{});
  record.ctx_request_id = std::int64_t{5};
  record.disagg_request_id = std::string("d-5");
  BOOST_TEST(checked(record) ==
             R"({"request_id":42,"perf_metrics":{"timing_metrics":{}},"ctx_request_id":5,"status":"complete",)"
             R"("disagg_request_id":"d-5"})");
}

BOOST_AUTO_TEST_CASE(a_disaggregated_record_takes_the_disagg_branch_with_each_phases_own_request_id) {
  perf::PhaseMetrics ctx = phase();
  ctx.request_id = std::string("7");
  ctx.ctx_request_id = std::int64_t{7};
  perf::PhaseMetrics gen;
  gen.first_iter = 3;
  const perf::PerfMetricsRecord record{
      .request_id = std::string("disagg-7"),
      .phases = {.ctx = ctx,
                 .gen = gen,
                 .disagg = perf::DisaggPhase{.ctx_server = "ctx-0:8001",
                                             .gen_server = "gen-0:8002",
                                             .timing_metrics = {.server_arrival_time = 0.5,
                                                                .ctx_dispatch_time = 0.75,
                                                                .server_first_token_time = 1.5}}},
      .disagg_request_id = std::int64_t{7}};
  const std::string line = checked(record);
  BOOST_TEST(line.starts_with(R"({"ctx_server":"ctx-0:8001","gen_server":"gen-0:8002","disagg_server_arrival_time":0.5,)"
                              R"("disagg_ctx_dispatch_time":0.75,"disagg_server_first_token_time":1.5,"status":"complete",)"
                              R"("ctx_perf_metrics":{"request_id":7,"perf_metrics":)"));
  BOOST_TEST(jsonl_test::contains(line, R"("ctx_request_id":7,"time_breakdown_metrics")"));
  BOOST_TEST(line.ends_with(R"("gen_perf_metrics":{"request_id":"disagg-7","perf_metrics":{"timing_metrics":{},)"
                            R"("first_iter":3}},"disagg_request_id":7})"));
}

BOOST_AUTO_TEST_CASE(an_empty_ctx_or_gen_phase_is_left_out) {
  perf::PerfMetricsRecord record{.request_id = std::int64_t{1},
                                 .phases = {.ctx = perf::PhaseMetrics{}, .disagg = perf::DisaggPhase{}}};
  BOOST_TEST(!jsonl_test::contains(checked(record), "ctx_perf_metrics"));
}

BOOST_AUTO_TEST_CASE(a_record_with_neither_phase_is_malformed_as_a_missing_server) {
  const perf::PerfMetricsRecord record{.request_id = std::int64_t{1}};
  BOOST_TEST(checked(record) == "throws: 'server'");
}

BOOST_AUTO_TEST_CASE(a_nan_time_makes_the_record_malformed_as_on_the_json_path) {
  perf::PhaseMetrics server = phase();
  server.time_breakdown_metrics->step_metrics[0].forward_end_time = std::nan("");
  BOOST_TEST(checked(worker(server)) == "throws: Out of range float values are not JSON compliant: nan");
  perf::PerfMetricsRecord disagg{.request_id = std::int64_t{1}, .phases = {.disagg = perf::DisaggPhase{}}};
  disagg.phases.disagg->timing_metrics.ctx_dispatch_time = -INFINITY;
  BOOST_TEST(checked(disagg) == "throws: Out of range float values are not JSON compliant: -inf");
}

// Random records: every optional present or not, ids of each kind, odd doubles and
// strings (non-ASCII, invalid UTF-8), now and then a NaN.
class RandomRecords {
 public:
  explicit RandomRecords(std::uint64_t seed) : random_(seed) {}

  perf::PerfMetricsRecord next() {
    perf::PerfMetricsRecord record;
    record.request_id = id();
    if (coin()) record.status = text();
    if (coin()) record.ctx_request_id = id();
    if (coin()) record.disagg_request_id = id();
    if (coin(0.3)) {
      record.phases.disagg = perf::DisaggPhase{text(), text(), {number(), number(), number()}};
      if (coin(0.8)) record.phases.ctx = phase_metrics();
      if (coin(0.8)) record.phases.gen = phase_metrics();
    } else if (coin(0.97)) {
      record.phases.server = phase_metrics();
    }
    return record;
  }

 private:
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(random_); }
  std::int64_t integer() {
    switch (std::uniform_int_distribution<int>(0, 3)(random_)) {
      case 0: return 0;
      case 1: return std::uniform_int_distribution<std::int64_t>(-5, 5)(random_);
      case 2: return std::uniform_int_distribution<std::int64_t>()(random_);
      default: return std::uniform_int_distribution<std::int64_t>(0, 1 << 20)(random_);
    }
  }
  double number() {
    switch (std::uniform_int_distribution<int>(0, 9)(random_)) {
      case 0: return 0.0;
      case 1: return -0.0;
      case 2: return std::ldexp(std::uniform_real_distribution<double>(-1, 1)(random_),
                                std::uniform_int_distribution<int>(-1070, 1020)(random_));
      case 3: return coin(0.1) ? std::nan("") : 1e16;
      default: return std::uniform_real_distribution<double>(0, 100000)(random_);
    }
  }
  std::optional<double> maybe_number() { return coin(0.8) ? std::optional(number()) : std::nullopt; }
  std::string text() {
    static const std::vector<std::string> pieces{"a", "ctx-0:8001", "é", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\"",
                                                 "\\", "\n", "\x01", "\xff", "\xc3", " ", "7"};
    std::string out;
    for (int n = std::uniform_int_distribution<int>(0, 6)(random_); n > 0; --n) {
      out += pieces[std::uniform_int_distribution<std::size_t>(0, pieces.size() - 1)(random_)];
    }
    return out;
  }
  perf::RequestId id() {
    switch (std::uniform_int_distribution<int>(0, 3)(random_)) {
      case 0: return integer();
      case 1: return std::to_string(integer());
      case 2: return " +" + std::to_string(std::uniform_int_distribution<int>(0, 999)(random_)) + "_1 ";
      default: return text();
    }
  }
  perf::PhaseMetrics phase_metrics() {
    perf::PhaseMetrics phase;
    if (coin(0.2)) return phase;
    if (coin(0.3)) phase.request_id = id();
    if (coin(0.3)) phase.ctx_request_id = id();
    if (coin(0.8)) phase.first_iter = integer();
    if (coin(0.8)) phase.last_iter = integer();
    if (coin(0.9)) {
      phase.timing_metrics = perf::TimingMetrics{maybe_number(), maybe_number(), maybe_number(), maybe_number(),
                                                 maybe_number(), maybe_number(), coin() ? 0 : integer(),
                                                 maybe_number(), maybe_number()};
    }
    if (coin(0.8)) phase.kv_cache_metrics = perf::KvCacheMetrics{integer(), integer(), integer(), integer(), number()};
    if (coin(0.3)) phase.speculative_decoding = perf::SpeculativeDecodingMetrics{number(), integer(), integer()};
    if (coin(0.7)) {
      perf::TimeBreakdownMetrics breakdown;
      for (int n = std::uniform_int_distribution<int>(0, 4)(random_); n > 0; --n) {
        breakdown.step_metrics.push_back({coin(0.9) ? std::optional(integer()) : std::nullopt, maybe_number(),
                                          maybe_number(), maybe_number(), maybe_number(),
                                          coin(0.2) ? maybe_number() : std::nullopt, std::nullopt});
      }
      if (coin(0.2)) breakdown.ctx_chunk_metrics = std::vector<perf::StepMetrics>{{.forward_start_time = number()}};
      phase.time_breakdown_metrics = std::move(breakdown);
    }
    return phase;
  }

  std::mt19937_64 random_;
};

BOOST_AUTO_TEST_CASE(thousands_of_random_records_give_the_json_paths_bytes) {
  RandomRecords records(20261201);
  int malformed = 0;
  int disaggregated = 0;
  for (int i = 0; i < 5000; ++i) {
    const perf::PerfMetricsRecord record = records.next();
    const std::string typed = typed_line(record);
    const std::string from_json = json_line(record);
    BOOST_TEST_REQUIRE(typed == from_json, "record " << i << ": " << json::serialize(jsonl::to_json_value(record)));
    malformed += typed.starts_with("throws: ");
    disaggregated += record.phases.disagg.has_value();
  }
  // The generator reaches both branches and both outcomes.
  BOOST_TEST(malformed > 50);
  BOOST_TEST(malformed < 2500);
  BOOST_TEST(disaggregated > 1000);
}

BOOST_AUTO_TEST_CASE(a_typed_writer_writes_the_file_the_json_writer_writes_for_the_same_records) {
  jsonl_test::ScratchDirectory typed_dir;
  jsonl_test::ScratchDirectory json_dir;
  jsonl_test::LogRecord<jsonl::LogLevel> log;
  jsonl::TypedPerfMetricsJsonlWriter typed(typed_dir.path(), "server", log.sink());
  jsonl::PerfMetricsJsonlWriter from_json(json_dir.path(), "server", log.sink());
  typed.start();
  from_json.start();
  RandomRecords records(7);
  for (int i = 0; i < 500; ++i) {
    perf::PerfMetricsRecord record = records.next();
    BOOST_TEST_REQUIRE(from_json.submit_wait(jsonl::to_json_value(record)));
    BOOST_TEST_REQUIRE(typed.submit_wait(std::move(record)));
  }
  typed.submit(perf::PerfMetricsRecord{.request_id = std::int64_t{1}, .phases = {.server = perf::PhaseMetrics{}}});
  from_json.submit(json::parse(R"({"request_id":1,"phases":{"server":{}}})"));
  typed.close();
  from_json.close();
  BOOST_TEST(jsonl_test::read_file(*typed.path()) == jsonl_test::read_file(*from_json.path()));
  BOOST_TEST(typed.stats().written == from_json.stats().written);
  BOOST_TEST(typed.stats().dropped(jsonl::DropReason::malformed) == from_json.stats().dropped(jsonl::DropReason::malformed));
  BOOST_TEST(typed.stats().sanitized == from_json.stats().sanitized);
}

BOOST_AUTO_TEST_SUITE_END()
