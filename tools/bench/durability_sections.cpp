// Durability's cost: typed records end to end on the working disk with durability on
// against off, in the same run, beside the disk's own fsync latency; and the same with
// every fsync slowed to a few milliseconds, where group commit carries the throughput.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "measure.hpp"
#include "sections.hpp"
#include "support.hpp"

namespace jsonl_bench {
namespace {

// The real calls, counting the data files' fsyncs, each made at least `fsync_floor` long.
class CountingCalls : public jsonl::FileCalls {
 public:
  explicit CountingCalls(std::chrono::microseconds fsync_floor = {}) : fsync_floor_(fsync_floor) {}
  int fsync(int fd, const std::filesystem::path& file) const override {
    const auto start = Clock::now();
    const int result = FileCalls::fsync(fd, file);
    if (file.extension() == ".jsonl") {
      ++data_fsyncs;
      std::this_thread::sleep_until(start + fsync_floor_);
    }
    return result;
  }
  mutable std::atomic<std::uint64_t> data_fsyncs{0};

 private:
  std::chrono::microseconds fsync_floor_;
};

struct Run {
  double records_per_second = 0;
  double records_per_fsync = 0;
};

// One producer moves prebuilt typed records in (submit_wait: none dropped); timed from the
// first submit until close() has written (with durability: persisted) the last.
Run end_to_end(const std::vector<jsonl::perf::PerfMetricsRecord>& data, const std::filesystem::path& directory,
               bool durable, std::chrono::microseconds fsync_floor = {}) {
  auto calls = std::make_shared<CountingCalls>(fsync_floor);
  auto options = jsonl::perf_metrics_options(fresh_directory(directory), "bench", [](jsonl::LogLevel, std::string_view) {});
  options.durability = {.enabled = durable, .calls = calls};
  std::vector<jsonl::perf::PerfMetricsRecord> records = data;
  jsonl::TypedPerfMetricsJsonlWriter writer(std::move(options));
  const double seconds = seconds_writing_all(writer, records);
  const auto stats = writer.stats();
  if (stats.written != data.size()) std::printf("warning: wrote %zu of %zu\n", std::size_t(stats.written), data.size());
  const std::uint64_t fsyncs = calls->data_fsyncs.load();
  return {stats.written / seconds, fsyncs ? double(stats.written) / fsyncs : 0};
}

// The faster of two interleaved turns of each, so that a slow stretch of a shared
// machine falls on neither alone.
std::pair<Run, Run> off_and_on(const std::vector<jsonl::perf::PerfMetricsRecord>& data,
                               const std::filesystem::path& directory, std::chrono::microseconds fsync_floor = {}) {
  Run off, on;
  for (int turn = 0; turn < 2; ++turn) {
    const Run a = end_to_end(data, directory, false, fsync_floor);
    const Run b = end_to_end(data, directory, true, fsync_floor);
    if (a.records_per_second > off.records_per_second) off = a;
    if (b.records_per_second > on.records_per_second) on = b;
  }
  return {off, on};
}

// fsync() after appending `bytes`, timed alone, on the working disk: the p50 in µs.
double fsync_p50_us(const std::filesystem::path& directory, std::size_t bytes, int count) {
  const std::filesystem::path file = fresh_directory(directory) / "fsync.probe";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const std::string chunk(bytes, 'x');
  std::vector<double> samples;
  for (int i = 0; i < count; ++i) {
    if (::write(fd, chunk.data(), chunk.size()) < 0) break;
    const auto start = Clock::now();
    ::fsync(fd);
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  ::close(fd);
  return samples.empty() ? 0 : percentile(samples, 50);
}

}  // namespace

int durability(const Settings& settings) {
  const std::size_t count = settings.quick ? 20'000 : 300'000;
  const auto data = typed_records(count, Shape::worker);
  const std::filesystem::path directory = settings.disk_dir / "durability";
  int failed = 0;

  figure("durability_disk_fsync_p50_after_150KB", fsync_p50_us(directory, 150'000, settings.quick ? 50 : 300), "us");
  const auto [off, on] = off_and_on(data, directory);
  figure("durability_e2e_off", off.records_per_second, "records/s");
  figure("durability_e2e_on", on.records_per_second, "records/s");
  figure("durability_e2e_on_records_per_fsync", on.records_per_fsync, "records");
  const double ratio = on.records_per_second / off.records_per_second;
  figure("durability_e2e_ratio_on_to_off", ratio, "x");
  failed += target("durability_e2e_on_at_least_half_off", ratio >= 0.5, std::to_string(ratio) + "x");

  // A disk whose every fsync takes 2 ms: what group commit is for.
  const auto slow = std::chrono::microseconds(2000);
  const auto [slow_off, slow_on] = off_and_on(data, directory, slow);
  figure("durability_e2e_on_fsync_2ms", slow_on.records_per_second, "records/s");
  figure("durability_e2e_on_fsync_2ms_records_per_fsync", slow_on.records_per_fsync, "records");
  figure("durability_e2e_ratio_on_fsync_2ms_to_off", slow_on.records_per_second / slow_off.records_per_second, "x");
  std::filesystem::remove_all(directory);
  return failed;
}

}  // namespace jsonl_bench
