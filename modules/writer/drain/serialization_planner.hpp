// Whether the drain serializes a round of batches alone or side by side on oneTBB's
// threads, decided from what each way has cost. A header of the drain's implementation
// (side_by_side.cpp), and of the tests that check its policy on its own: no module
// exports it.
//
// Why measure rather than assume: side by side pays when the allocator scales across
// threads. With glibc's malloc it can run slower than one thread: the records were
// allocated by the producer's thread, and two threads releasing them at once contend
// for that thread's arena (on a 2-core machine, 145k records/s side by side against
// 200k alone, end to end; under oneTBB's scalable allocator, 260k against 205k).
#pragma once

#include <chrono>
#include <cstddef>

namespace jsonl::detail {

class SerializationPlanner {
 public:
  enum class Mode { alone, side_by_side };

  // Rounds smaller than this are serialized alone and not measured: there is too little
  // to share out.
  static constexpr std::size_t min_records_to_share = 64;
  // Every this many measured rounds, the way that has been slower is tried once more,
  // so a change in conditions (another allocator, other load) is noticed.
  static constexpr unsigned probe_interval = 16;
  // The way in use gives way only to one that has lately cost at least this fraction
  // less: a noisy probe or two must not swing the drain back and forth.
  static constexpr double switch_margin = 0.125;

  // The way to serialize a round of `records` records. Each way is tried once first,
  // side by side first, and side by side is the way in use until the other is cheaper
  // by the switch margin.
  Mode plan(std::size_t records) {
    if (records < min_records_to_share) return Mode::alone;
    ++rounds_;
    if (!known_[index(Mode::side_by_side)]) return Mode::side_by_side;
    if (!known_[index(Mode::alone)]) return Mode::alone;
    if (rounds_ % probe_interval == 0) return other(in_use_);
    return in_use_;
  }

  // What a round planned for `records` took `mode`'s way. Recent rounds weigh most.
  void measured(Mode mode, std::size_t records, std::chrono::nanoseconds took) {
    if (records < min_records_to_share) return;
    const double per_record = static_cast<double>(took.count()) / static_cast<double>(records);
    double& average = cost_[index(mode)];
    average = known_[index(mode)] ? average + (per_record - average) / 4 : per_record;
    known_[index(mode)] = true;
    const Mode challenger = other(in_use_);
    if (known_[index(challenger)] && cost(challenger) < cost(in_use_) * (1 - switch_margin)) in_use_ = challenger;
  }

  // Nanoseconds per record, on average over the recent rounds serialized `mode`'s way;
  // 0 until one was.
  double cost(Mode mode) const noexcept { return cost_[index(mode)]; }

 private:
  static int index(Mode mode) noexcept { return mode == Mode::alone ? 0 : 1; }
  static Mode other(Mode mode) noexcept { return mode == Mode::alone ? Mode::side_by_side : Mode::alone; }

  double cost_[2] = {0, 0};
  bool known_[2] = {false, false};
  unsigned rounds_ = 0;
  Mode in_use_ = Mode::side_by_side;
};

}  // namespace jsonl::detail
