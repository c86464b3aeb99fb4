// In steady state the writer allocates nothing per record: not in submit, not in the
// drain, not on the write side. This binary's allocation functions count (counted_heap)
// every allocation any thread makes while records built beforehand are submitted and
// written; a JSON record's own nodes are built before the count starts.
#define BOOST_TEST_MODULE allocation_tests
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "counted_heap.hpp"
#include "test_support.hpp"
#include "held_sink.hpp"

import jsonl.perf_metrics;

namespace perf = jsonl::perf;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t counted_records = 10'000;
// Rounds of the same records written before the count: the buffers reach the sizes
// those records need (the longest line among them included) before anything is counted.
constexpr std::size_t warm_up_rounds = 2;

perf::PerfMetricsRecord typed_record(std::size_t i) {
  perf::PhaseMetrics server{
      .first_iter = 10,
      .last_iter = 20,
      .timing_metrics = perf::TimingMetrics{.arrival_time = 1.0 + static_cast<double>(i),
                                            .first_scheduled_time = 1.25,
                                            .first_token_time = 1.5,
                                            .last_token_time = 2.0},
      .kv_cache_metrics = perf::KvCacheMetrics{.num_total_allocated_blocks = 8, .kv_cache_hit_rate = 0.25}};
  return {.request_id = static_cast<std::int64_t>(i), .phases = {.server = std::move(server)}};
}

// The raw record the serving app hands over: the phases the schema shapes.
std::string raw_record(std::size_t i) {
  return R"({"request_id": ")" + std::to_string(i) +
         R"(", "status": "complete", "phases": {"server": {"first_iter": 10, "last_iter": 20,)"
         R"( "timing_metrics": {"arrival_time": 1.5, "first_scheduled_time": 1.75, "first_token_time": 2.0,)"
         R"( "last_token_time": 2.5}}}})";
}

boost::json::value json_record(std::size_t i) { return boost::json::parse(raw_record(i)); }

jsonl::ArenaRecord arena_record(std::size_t i) {
  boost::system::error_code error;
  return jsonl::ArenaRecord::parse(raw_record(i), error);
}

// Allocations while `counted_records` records, built beforehand, go through a started
// writer that has written a few rounds of the same records already.
template <class Record, class Make>
std::uint64_t allocations_in_steady_state(Make make, jsonl::Compression compression = {}) {
  const jsonl_test::ScratchDirectory directory;
  jsonl::WriterOptions options = jsonl::perf_metrics_options(directory.path(), "worker");
  options.compression = compression;
  jsonl::PerfMetricsWriter<Record> writer(std::move(options));
  writer.start();
  const auto write_all = [&](std::vector<Record>& records) {
    for (Record& record : records) writer.submit_wait(std::move(record));
    return writer.flush(60s);
  };
  for (std::size_t round = 0; round < warm_up_rounds; ++round) {
    std::vector<Record> records;
    for (std::size_t i = 0; i < counted_records; ++i) records.push_back(make(i));
    BOOST_REQUIRE(write_all(records));
  }
  std::vector<Record> records;
  records.reserve(counted_records);
  for (std::size_t i = 0; i < counted_records; ++i) records.push_back(make(i));
  counted_heap::start_counting();
  const bool flushed = write_all(records);
  counted_heap::stop_counting();
  BOOST_REQUIRE(flushed);
  writer.close();
  BOOST_TEST(writer.stats().written == (warm_up_rounds + 1) * counted_records);
  return counted_heap::allocations();
}

using TypedWriter = jsonl::JsonlRecordWriter<perf::PerfMetricsRecord>;

// Writes `records` so that all but the first two are taken by the drain in one round:
// the first is held at the sink, the drain waits with the second to hand it off, and the
// rest are submitted before either goes on.
bool write_in_one_round(TypedWriter& writer, jsonl_test::HeldSink& sink, std::span<perf::PerfMetricsRecord> records) {
  sink.hold();
  writer.submit_wait(std::move(records[0]));
  sink.await_held_append();
  writer.submit_wait(std::move(records[1]));
  while (writer.stats().queue_depth != 0) std::this_thread::yield();
  for (perf::PerfMetricsRecord& record : records.subspan(2)) writer.submit_wait(std::move(record));
  sink.let_through();
  return writer.flush(60s);
}

// Allocations while a round fills every batch it may hold, in a writer whose rounds
// until then held one batch, or with `warm_up_nearly_full` a record less than a full
// round. Plain, a batch of the round serialized for the first time finds its buffers
// sized for the writer's largest batch already. Compressed, a round's lines for a file
// are one append, and one longer than any before finds room made ahead (to a power of
// two) for its lines and its piece of the frame.
std::uint64_t allocations_in_a_full_round(jsonl::Compression compression, bool warm_up_nearly_full) {
  const jsonl_test::ScratchDirectory directory;
  jsonl::WriterOptions options = jsonl::perf_metrics_options(directory.path(), "worker");
  options.compression = compression;
  const std::size_t batches_in_a_full_round = options.queue_size / 4 / options.batch_size;
  BOOST_REQUIRE(batches_in_a_full_round > 1);
  auto sink = std::make_shared<jsonl_test::HeldSink>();
  TypedWriter writer(std::move(options), std::make_shared<jsonl::PerfMetricsTypedFormat>(), sink);
  writer.start();
  const auto make_records = [](std::size_t count) {
    std::vector<perf::PerfMetricsRecord> records;
    records.reserve(count);
    for (std::size_t i = 0; i < count; ++i) records.push_back(typed_record(i));
    return records;
  };
  const std::size_t batch_size = jsonl::perf_metrics_batch_size;
  const std::size_t full_round = 2 + batches_in_a_full_round * batch_size;
  const std::size_t warm_up_round = warm_up_nearly_full ? full_round - 1 : 2 + batch_size;
  for (std::size_t round = 0; round < warm_up_rounds; ++round) {
    std::vector<perf::PerfMetricsRecord> records = make_records(warm_up_round);
    BOOST_REQUIRE(write_in_one_round(writer, *sink, records));
  }
  std::vector<perf::PerfMetricsRecord> records = make_records(full_round);
  counted_heap::start_counting();
  const bool written = write_in_one_round(writer, *sink, records);
  counted_heap::stop_counting();
  BOOST_REQUIRE(written);
  writer.close();
  BOOST_TEST(writer.stats().written == warm_up_rounds * warm_up_round + records.size());
  return counted_heap::allocations();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(allocations)

BOOST_AUTO_TEST_CASE(typed_records_cost_no_allocation_once_warm) {
  BOOST_TEST(allocations_in_steady_state<perf::PerfMetricsRecord>(typed_record) == 0u);
}

BOOST_AUTO_TEST_CASE(arena_records_cost_no_allocation_once_warm) {
  BOOST_TEST(allocations_in_steady_state<jsonl::ArenaRecord>(arena_record) == 0u);
}

BOOST_AUTO_TEST_CASE(json_records_cost_no_allocation_once_warm) {
  BOOST_TEST(allocations_in_steady_state<boost::json::value>(json_record) == 0u);
}

// What the cases below count is every C++ allocation; a sanitizer's hook counts every
// malloc of the process too, so there they are not built. A round fuller than any
// before may be the first the planner serializes side by side, and oneTBB then starts
// its workers, whose thread starts malloc (glibc's pthread_getattr_np, called by the
// sanitizer's runtime as each thread begins). zstd's context allocates its workspace
// itself, with malloc, and sizes it again when a frame's size is of another order than
// the one before: the compressed cases count the frames' scratch space and texts.
#ifndef JSONL_SANITIZER_OWNS_ALLOCATION
BOOST_AUTO_TEST_CASE(a_round_fuller_than_any_before_costs_no_allocation) {
  BOOST_TEST(allocations_in_a_full_round({}, false) == 0u);
}

BOOST_AUTO_TEST_CASE(compressed_typed_records_cost_no_allocation_once_warm) {
  BOOST_TEST(allocations_in_steady_state<perf::PerfMetricsRecord>(typed_record, jsonl::Compression::zstd()) == 0u);
}

BOOST_AUTO_TEST_CASE(a_compressed_round_a_record_longer_than_any_before_costs_no_allocation) {
  BOOST_TEST(allocations_in_a_full_round(jsonl::Compression::zstd(), true) == 0u);
}
#endif

BOOST_AUTO_TEST_SUITE_END()
