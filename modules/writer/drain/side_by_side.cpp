module;

#include <tbb/parallel_for.h>

#include <chrono>
#include <cstddef>
#include <memory>

#include "serialization_planner.hpp"
#include "thread_sanitizer.hpp"

module jsonl.writer;

import :side_by_side;

namespace jsonl::detail {

namespace {

// oneTBB starts the tasks and waits for them inside its library, where ThreadSanitizer
// sees neither: each task is declared to follow the call, and the return (or the
// rethrow of a task's exception) to follow every task. The two orders use two addresses,
// so they add none between the tasks themselves: whether two tasks touching the same
// memory are reported is up to which of them oneTBB runs at once, as it is for any
// race. A task finds the addresses from its own (the index form of parallel_for calls
// the caller's object, by reference), so it reads nothing of the caller's before its
// declared order.
struct OrderedTasks {
  void operator()(std::size_t i) const {
    order_acquire(this);
    const ReleaseOnExit finished{&joined};
    body(i);
  }

  IndexTask body;
  char joined = 0;
};

}  // namespace

void run_side_by_side(std::size_t count, IndexTask body) {
  OrderedTasks tasks{body};
  order_release(&tasks);
  try {
    tbb::parallel_for(std::size_t{0}, count, tasks);
  } catch (...) {
    order_acquire(&tasks.joined);
    throw;
  }
  order_acquire(&tasks.joined);
}

struct RoundPlanner::Planner : SerializationPlanner {};

RoundPlanner::RoundPlanner() : planner_(std::make_unique<Planner>()) {}

RoundPlanner::~RoundPlanner() = default;

bool RoundPlanner::side_by_side(std::size_t records) {
  return planner_->plan(records) == SerializationPlanner::Mode::side_by_side;
}

void RoundPlanner::measured(bool side_by_side, std::size_t records, std::chrono::nanoseconds took) {
  planner_->measured(side_by_side ? SerializationPlanner::Mode::side_by_side : SerializationPlanner::Mode::alone,
                     records, took);
}

}  // namespace jsonl::detail
