module;

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

module jsonl.writer;

import :admission;

namespace jsonl::detail {

Admission::Admission(std::size_t capacity, bool accepting)
    : capacity_(capacity), state_(accepting ? accepting_bit : 0) {}

// One attempt-loop of admission from `state` (the last value seen). Refuses without
// writing the state word: a closed writer or a full queue costs a load, not a contended
// read-modify-write.
Admission::Verdict Admission::admit(std::uint64_t& state) noexcept {
  for (;;) {
    if ((state & accepting_bit) == 0) return Verdict::refused_closed;
    if ((state & depth_mask) >= capacity_) return Verdict::refused_full;
    const std::uint64_t depth = (state & depth_mask) + 1;
    const bool wake = (state & idle_bit) != 0 || ((state & napping_bit) != 0 && depth >= (capacity_ + 1) / 2);
    const std::uint64_t next = wake ? (state + 1) & ~(idle_bit | napping_bit) : state + 1;
    if (state_.compare_exchange_weak(state, next, std::memory_order_relaxed)) {
      return wake ? Verdict::admitted_wake_drain : Verdict::admitted;
    }
  }
}

Admission::Verdict Admission::reserve() noexcept {
  std::uint64_t state = state_.load(std::memory_order_relaxed);
  return admit(state);
}

Admission::Verdict Admission::wait_for_room() noexcept {
  bool waiting = false;
  for (;;) {
    const std::uint32_t epoch = room_epoch_.load(std::memory_order_acquire);
    std::uint64_t state = state_.load(std::memory_order_relaxed);
    const Verdict verdict = admit(state);
    if (verdict != Verdict::refused_full) {
      if (waiting) waiting_.fetch_sub(1, std::memory_order_relaxed);
      return verdict;
    }
    if (!waiting) waiting_.fetch_add(1, std::memory_order_relaxed);
    waiting = true;
    room_epoch_.wait(epoch, std::memory_order_acquire);
  }
}

void Admission::announce_room() noexcept {
  room_epoch_.fetch_add(1, std::memory_order_release);
  room_epoch_.notify_all();
}

void Admission::give_back() noexcept { state_.fetch_sub(1, std::memory_order_relaxed); }

std::uint64_t Admission::release(std::size_t records) noexcept {
  std::uint64_t depth;
  std::uint64_t released;
  {
    const std::lock_guard lock(released_mutex_);
    depth = (state_.fetch_sub(records, std::memory_order_relaxed) & depth_mask) - records;
    released = released_.fetch_add(records, std::memory_order_relaxed) + records;
  }
  // Waiting submits are woken once the queue is half empty, not after every batch: they
  // then refill it in one go instead of trading the cores with the drain batch by batch.
  if (depth <= capacity_ / 2) announce_room();
  return released;
}

std::uint64_t Admission::admitted() const noexcept {
  const std::lock_guard lock(released_mutex_);
  return released_.load(std::memory_order_relaxed) + depth();
}

void Admission::finished_through(std::uint64_t released) noexcept {
  std::uint64_t finished = finished_through_.load();
  while (finished < released && !finished_through_.compare_exchange_weak(finished, released)) {
  }
  // A waiter registers before it checks the mark, so either it sees the new mark or
  // this sees it waiting.
  if (flush_waiters_.load() != 0) {
    { const std::lock_guard lock(flush_mutex_); }
    flush_progress_.notify_all();
  }
}

void Admission::finished_all() noexcept { finished_through(UINT64_MAX); }

bool Admission::await_finished(std::uint64_t records, std::chrono::steady_clock::time_point deadline) {
  flush_waiters_.fetch_add(1);
  std::unique_lock lock(flush_mutex_);
  const bool finished =
      flush_progress_.wait_until(lock, deadline, [&] { return finished_through_.load() >= records; });
  lock.unlock();
  flush_waiters_.fetch_sub(1);
  return finished;
}

std::uint64_t Admission::depth() const noexcept { return state_.load(std::memory_order_relaxed) & depth_mask; }

bool Admission::accepting() const noexcept { return (state_.load(std::memory_order_relaxed) & accepting_bit) != 0; }

void Admission::stop_accepting() noexcept {
  state_.fetch_and(~accepting_bit, std::memory_order_acq_rel);
  announce_room();  // wakes waiting submits, which now see the writer closed
  wake_drain();
}

void Admission::await_records(unsigned empty_polls) {
  const std::uint64_t bit = empty_polls >= naps_before_idle ? idle_bit : napping_bit;
  std::uint64_t state = state_.load(std::memory_order_relaxed);
  do {
    if ((state & depth_mask) != 0 || (state & accepting_bit) == 0) {
      std::this_thread::yield();  // a push in progress, or closing: poll again
      return;
    }
  } while (!state_.compare_exchange_weak(state, state | bit, std::memory_order_relaxed));
  std::unique_lock lock(drain_mutex_);
  const auto woken = [&] {
    const std::uint64_t now = state_.load(std::memory_order_relaxed);
    return (now & bit) == 0 || (now & accepting_bit) == 0;
  };
  if (bit == idle_bit) {
    drain_wakeup_.wait(lock, woken);
  } else {
    drain_wakeup_.wait_for(lock, nap, woken);
  }
  state_.fetch_and(~bit, std::memory_order_relaxed);
}

void Admission::wake_drain() noexcept {
  // Taking the mutex orders this wake-up after the drain's check of its bit, so the
  // notification cannot fall between that check and the wait.
  { const std::lock_guard lock(drain_mutex_); }
  drain_wakeup_.notify_one();
}

}  // namespace jsonl::detail
