module;

#include <algorithm>
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

// Without holding, a napping drain is woken once the ring is half full: records that
// keep coming wait for the nap's end rather than cost each submit a wake-up.
Admission::Admission(std::size_t capacity, bool accepting, std::chrono::milliseconds linger, std::size_t hold_target)
    : capacity_(capacity),
      nap_(linger),
      wake_depth_(std::min<std::uint64_t>(hold_target == 0 ? capacity : hold_target, (capacity + 1) / 2)),
      state_(accepting ? accepting_bit : 0) {}

// One attempt-loop of admission from `state` (the last value seen). Refuses without
// writing the state word: a closed writer or a full ring costs a load, not a contended
// read-modify-write. Reading `released_` with acquire orders this producer's use of its
// slot after the drain's last use of it.
Admission::Reservation Admission::admit(std::uint64_t& state) noexcept {
  for (;;) {
    if ((state & accepting_bit) == 0) return {Verdict::refused_closed};
    const std::uint64_t ticket = state & count_mask;
    const std::uint64_t released = released_.load(std::memory_order_acquire);
    if (released > ticket) {  // `state` is older than the drain's release: look again
      state = state_.load(std::memory_order_relaxed);
      continue;
    }
    const std::uint64_t depth = ticket - released + 1;
    if (depth > capacity_) return {Verdict::refused_full};
    const bool wake = (state & idle_bit) != 0 || ((state & napping_bit) != 0 && depth >= wake_depth_);
    const std::uint64_t next = wake ? (state + 1) & ~(idle_bit | napping_bit) : state + 1;
    if (state_.compare_exchange_weak(state, next, std::memory_order_relaxed)) {
      return {wake ? Verdict::admitted_wake_drain : Verdict::admitted, ticket};
    }
  }
}

Admission::Reservation Admission::reserve() noexcept {
  std::uint64_t state = state_.load(std::memory_order_relaxed);
  return admit(state);
}

Admission::Reservation Admission::wait_for_room() noexcept {
  bool waiting = false;
  for (;;) {
    const std::uint32_t epoch = room_epoch_.load(std::memory_order_acquire);
    std::uint64_t state = state_.load(std::memory_order_relaxed);
    const Reservation reservation = admit(state);
    if (reservation.verdict != Verdict::refused_full) {
      if (waiting) waiting_.fetch_sub(1, std::memory_order_relaxed);
      return reservation;
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

std::uint64_t Admission::release(std::size_t records) noexcept {
  const std::uint64_t released = released_.fetch_add(records, std::memory_order_acq_rel) + records;
  // Waiting submits are woken once the ring is half empty, not after every batch: they
  // then refill it in one go instead of trading the cores with the drain batch by batch.
  if (admitted() - released <= capacity_ / 2) announce_room();
  return released;
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

std::uint64_t Admission::depth() const noexcept {
  // Released first: what is admitted later only adds to the depth, never below zero.
  const std::uint64_t released = released_.load(std::memory_order_acquire);
  return admitted() - released;
}

bool Admission::accepting() const noexcept { return (state_.load(std::memory_order_relaxed) & accepting_bit) != 0; }

void Admission::stop_accepting() noexcept {
  state_.fetch_and(~accepting_bit, std::memory_order_acq_rel);
  announce_room();  // wakes waiting submits, which now see the writer closed
  wake_drain();
}

void Admission::await_records(unsigned empty_polls) {
  const std::uint64_t bit = empty_polls >= naps_before_idle ? idle_bit : napping_bit;
  // Only the drain releases, so `released` holds still while it waits here.
  const std::uint64_t released = released_.load(std::memory_order_relaxed);
  std::uint64_t state = state_.load(std::memory_order_relaxed);
  do {
    if ((state & count_mask) != released || (state & accepting_bit) == 0) {
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
    drain_wakeup_.wait_for(lock, nap_, woken);
  }
  state_.fetch_and(~bit, std::memory_order_relaxed);
}

bool Admission::end_nap() noexcept {
  if ((state_.fetch_and(~napping_bit) & napping_bit) == 0) return false;
  wake_drain();
  return true;
}

// Sequentially consistent where the flag and the wanted mark meet: either want() sees
// the hold's flag and ends it, or hold() sees the mark after setting its flag.
bool Admission::hold(std::chrono::steady_clock::time_point deadline) {
  // Only the drain releases, so `released` holds still while it waits here.
  const std::uint64_t released = released_.load(std::memory_order_relaxed);
  std::uint64_t state = state_.load();
  do {
    if ((state & accepting_bit) == 0) return false;
    if ((state & count_mask) - released >= wake_depth_) {
      std::this_thread::yield();  // a batch admitted, its last stores in progress: look again
      return true;
    }
  } while (!state_.compare_exchange_weak(state, state | napping_bit));
  if (wanted_.load() > released) {
    state_.fetch_and(~napping_bit);
    return false;
  }
  std::unique_lock lock(drain_mutex_);
  drain_wakeup_.wait_until(lock, deadline, [&] {
    const std::uint64_t now = state_.load(std::memory_order_relaxed);
    return (now & napping_bit) == 0 || (now & accepting_bit) == 0;
  });
  state_.fetch_and(~napping_bit, std::memory_order_relaxed);
  return true;
}

void Admission::want(std::uint64_t records) noexcept {
  std::uint64_t wanted = wanted_.load();
  while (wanted < records && !wanted_.compare_exchange_weak(wanted, records)) {
  }
  end_nap();
}

void Admission::wake_drain() noexcept {
  // Taking the mutex orders this wake-up after the drain's check of its bit, so the
  // notification cannot fall between that check and the wait.
  { const std::lock_guard lock(drain_mutex_); }
  drain_wakeup_.notify_one();
}

}  // namespace jsonl::detail
