// Small measuring tools for jsonl-bench: a cycle-counter clock, percentiles, peak RSS.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <sys/resource.h>
#include <thread>
#include <vector>
#include <x86intrin.h>

namespace jsonl_bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Time stamps from the CPU's time-stamp counter: a few ns to read, unlike a clock call,
// so it can time a single ~50 ns operation. Calibrated against steady_clock.
class CycleClock {
 public:
  CycleClock() {
    const auto wall_start = std::chrono::steady_clock::now();
    const std::uint64_t start = now();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::uint64_t end = now();
    const auto wall = std::chrono::steady_clock::now() - wall_start;
    ns_per_tick_ = std::chrono::duration<double, std::nano>(wall).count() / double(end - start);
  }
  static std::uint64_t now() {
    _mm_lfence();
    const std::uint64_t ticks = __rdtsc();
    _mm_lfence();
    return ticks;
  }
  double ns(std::uint64_t ticks) const { return ticks * ns_per_tick_; }

 private:
  double ns_per_tick_ = 1;
};

// Nearest-rank percentile of unsorted samples (sorts them).
inline double percentile(std::vector<double>& samples, double p) {
  std::sort(samples.begin(), samples.end());
  const auto rank = static_cast<std::size_t>(p / 100.0 * samples.size() + 0.999999);
  return samples[std::clamp<std::size_t>(rank, 1, samples.size()) - 1];
}

inline double peak_rss_mib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

}  // namespace jsonl_bench
