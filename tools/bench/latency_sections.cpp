// Producer-side figures: submit latency while the drain keeps up and while it is stuck,
// overload, and close() on a stuck write.
#include <algorithm>
#include <atomic>
#include <new>
#include <optional>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "measure.hpp"
#include "sections.hpp"
#include "support.hpp"

namespace jsonl_bench {
namespace {

// A small prebuilt record, moved into submit.
boost::json::value small_record(std::size_t i) {
  return boost::json::object{{"request_id", static_cast<std::int64_t>(i)}, {"status", "complete"}};
}

struct Latencies {
  double p50, p99, p999;
};

// `producers` threads each make `per_producer` timed calls, one every `gap_ns`
// (spinning); `call(p, i)` is the i-th call of thread p.
template <class Call>
Latencies time_calls(unsigned producers, std::size_t per_producer, double gap_ns, const CycleClock& clock,
                     const Call& call) {
  std::vector<std::vector<double>> samples(producers);
  std::barrier start(producers);
  std::vector<std::jthread> threads;
  for (unsigned p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      samples[p].reserve(per_producer);
      start.arrive_and_wait();
      std::uint64_t next = CycleClock::now();
      const auto gap_ticks = static_cast<std::uint64_t>(gap_ns / clock.ns(1));
      for (std::size_t i = 0; i < per_producer; ++i) {
        while (CycleClock::now() < next) {
        }
        next += gap_ticks;
        const std::uint64_t before = CycleClock::now();
        call(p, i);
        samples[p].push_back(clock.ns(CycleClock::now() - before));
      }
    });
  }
  threads.clear();
  std::vector<double> all;
  for (auto& s : samples) all.insert(all.end(), s.begin(), s.end());
  return {percentile(all, 50), percentile(all, 99), percentile(all, 99.9)};
}

// Each producer submits `per_producer` prebuilt records, moved in.
template <class Writer>
Latencies time_submits(Writer& writer, unsigned producers, std::size_t per_producer, double gap_ns,
                       const CycleClock& clock) {
  std::vector<std::vector<boost::json::value>> records(producers);
  for (auto& mine : records) {
    mine.reserve(per_producer);
    for (std::size_t i = 0; i < per_producer; ++i) mine.push_back(small_record(i));
  }
  return time_calls(producers, per_producer, gap_ns, clock,
                    [&](unsigned p, std::size_t i) { writer.submit(std::move(records[p][i])); });
}

// The least any submit from several threads can cost here: one atomic read-modify-write
// on a cache line the other threads write too. Whatever admits records into one bounded
// queue and counts every drop exactly needs at least that much per call.
Latencies time_shared_increments(unsigned producers, std::size_t per_producer, double gap_ns,
                                 const CycleClock& clock) {
  alignas(64) std::atomic<std::uint64_t> shared{0};
  return time_calls(producers, per_producer, gap_ns, clock,
                    [&](unsigned, std::size_t) { shared.fetch_add(1, std::memory_order_relaxed); });
}

// Counts the heap a copy takes, in glibc malloc chunks: what one queued record holds,
// measured without holding copies (which would raise the peak RSS being measured).
class CountingResource : public boost::container::pmr::memory_resource {
 public:
  std::size_t allocated = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    allocated += std::max<std::size_t>(32, (bytes + 8 + 15) & ~std::size_t{15});  // a glibc malloc chunk
    return ::operator new(bytes, std::align_val_t(alignment));
  }
  void do_deallocate(void* pointer, std::size_t, std::size_t alignment) override {
    ::operator delete(pointer, std::align_val_t(alignment));
  }
  bool do_is_equal(const memory_resource& other) const noexcept override { return this == &other; }
};

// The memory one queued record holds: its queue slot and the heap its value uses.
double in_memory_size(const boost::json::value& record) {
  CountingResource counting;
  { const boost::json::value copy(record, boost::json::storage_ptr(&counting)); }
  return double(sizeof(std::optional<boost::json::value>) + counting.allocated);
}

}  // namespace

int submit_latency(const Settings& settings) {
  const CycleClock clock;
  const std::size_t per_producer = settings.quick ? 20'000 : 200'000;
  // Every sample includes reading the clock twice. What an empty call measures is
  // taken off the p50 that the target judges; the printed percentiles keep it.
  const double timer = time_calls(1, per_producer, 0.0, clock, [](unsigned, std::size_t) {}).p50;
  figure("submit_timer_overhead_p50", timer, "ns");
  int failed = 0;
  // The paced floor's p50, which the stuck submits are judged against too: unpaced, the
  // floor's two threads keep the counter's cache line for several increments in turn
  // (its p50 was 30 ns in some runs and 160 ns in others), which says how the hardware
  // batched the line that run, not what a shared increment costs.
  double paced_floor_p50 = 0;
  for (const bool stuck : {false, true}) {
    for (const unsigned producers : {1u, 2u}) {
      const auto directory = fresh_directory(settings.shm_dir / "submit");
      auto release = std::make_shared<std::latch>(1);
      auto options = jsonl::perf_metrics_options(directory, "bench", [](jsonl::LogLevel, std::string_view) {});
      jsonl::JsonlRecordWriter<> writer(options, std::make_shared<jsonl::JsonLineFormat>(),
                                        stuck ? std::make_shared<StuckSink>(release) : nullptr);
      writer.start();
      // Keeping up: 100,000 records/s in total. Stuck: as fast as the calls go.
      const double gap_ns = stuck ? 0.0 : 1e9 / 100'000 * producers;
      const Latencies latency = time_submits(writer, producers, per_producer, gap_ns, clock);
      release->count_down();
      writer.close();
      const std::string name = std::string("submit_") + (stuck ? "stuck" : "keeping_up") + "_" +
                               std::to_string(producers) + "p";
      figure((name + "_p50").c_str(), latency.p50, "ns");
      figure((name + "_p99").c_str(), latency.p99, "ns");
      figure((name + "_p99.9").c_str(), latency.p999, "ns");
      if (producers == 2) {
        // The floor, paced as the submits were, right after them.
        const Latencies floor = time_shared_increments(producers, per_producer, gap_ns, clock);
        figure((name + "_floor_shared_increment_p50").c_str(), floor.p50, "ns");
        figure((name + "_floor_shared_increment_p99.9").c_str(), floor.p999, "ns");
        figure((name + "_p50_ratio_to_floor").c_str(), latency.p50 / floor.p50, "x");
        figure((name + "_p99.9_ratio_to_floor").c_str(), latency.p999 / floor.p999, "x");
        const double net = latency.p50 - timer;
        figure((name + "_p50_net_of_timer").c_str(), net, "ns");
        // One bounded queue that counts every drop exactly costs at least one shared
        // increment a submit; an admitted record pays two.
        if (!stuck) paced_floor_p50 = floor.p50;
        const double ratio = latency.p50 / paced_floor_p50;
        failed += target((name + (stuck ? "_p50_le_2.5x_paced_floor" : "_p50_le_2.5x_floor")).c_str(), ratio <= 2.5,
                         std::to_string(ratio) + "x the shared increment (" + std::to_string(latency.p50) + " ns, " +
                             std::to_string(net) + " net of the timer)");
      }
      // The submit's own tail: judged where no thread of the writer has to take a
      // producer's core to run. Two producers keeping up leave the drain and the write
      // worker none (four runnable threads, two cores), so their tail is the scheduler's.
      if (stuck || producers == 1) {
        failed += target((name + "_p99.9_le_5us").c_str(), latency.p999 <= 5000, std::to_string(latency.p999) + " ns");
      }
    }
  }
  return failed;
}

int overload(const Settings& settings) {
  const CycleClock clock;
  const auto directory = fresh_directory(settings.shm_dir / "overload");
  const double seconds = settings.quick ? 2 : 10;
  auto options = jsonl::perf_metrics_options(directory, "bench", [](jsonl::LogLevel, std::string_view) {});
  jsonl::PerfMetricsJsonlWriter writer(options);
  figure("overload_rss_before_writer", peak_rss_mib(), "MiB");
  const auto sample = raw_records(64, Shape::worker);
  const double record_bytes = in_memory_size(sample.front());
  writer.start();
  std::atomic<bool> stop = false;
  std::vector<std::vector<double>> samples(2);
  std::vector<std::jthread> producers;
  for (unsigned p = 0; p < 2; ++p) {
    producers.emplace_back([&, p] {
      std::size_t i = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        boost::json::value record = sample[i++ % sample.size()];
        const std::uint64_t before = CycleClock::now();
        writer.submit(std::move(record));
        if (samples[p].size() < 100'000) samples[p].push_back(clock.ns(CycleClock::now() - before));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  producers.clear();
  writer.close();
  const auto stats = writer.stats();
  std::vector<double> all;
  for (auto& s : samples) all.insert(all.end(), s.begin(), s.end());
  figure("overload_submitted", double(stats.submitted), "records");
  figure("overload_written", double(stats.written), "records");
  figure("overload_dropped_queue_full", double(stats.dropped(jsonl::DropReason::queue_full)), "records");
  figure("overload_submit_p50", percentile(all, 50), "ns");
  figure("overload_submit_p99.9", percentile(all, 99.9), "ns");
  const double rss = peak_rss_mib();
  const double bound = options.queue_size * record_bytes / (1 << 20) + 16;
  figure("overload_peak_rss", rss, "MiB");
  figure("overload_record_in_memory", record_bytes, "bytes");
  int failed = target("overload_accounting_exact", stats.submitted == stats.written + stats.dropped(),
                      std::to_string(stats.submitted) + " = " + std::to_string(stats.written) + " + " +
                          std::to_string(stats.dropped()));
  failed += target("overload_peak_rss_bounded", rss <= bound,
                   std::to_string(rss) + " MiB, bound " + std::to_string(bound) +
                       " MiB (queue capacity x in-memory record size + 16 MiB)");
  return failed;
}

int stuck_close(const Settings& settings) {
  const auto directory = fresh_directory(settings.shm_dir / "stuck");
  auto release = std::make_shared<std::latch>(1);
  auto options = jsonl::perf_metrics_options(directory, "bench", [](jsonl::LogLevel, std::string_view) {});
  options.shutdown_timeout = std::chrono::milliseconds(500);
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<jsonl::PerfMetricsFormat>(),
                                    std::make_shared<StuckSink>(release));
  writer.start();
  for (auto& record : raw_records(200, Shape::worker)) writer.submit(std::move(record));
  const auto began = std::chrono::steady_clock::now();
  writer.close();
  const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
  release->count_down();
  const double margin = took - options.shutdown_timeout.count();
  figure("stuck_close_margin", margin, "ms");
  return target("stuck_close_within_timeout_plus_20ms", margin >= 0 && margin <= 20,
                std::to_string(margin) + " ms past the timeout");
}

}  // namespace jsonl_bench
