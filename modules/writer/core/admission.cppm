// Admission: which submits a writer takes, how its drain waits for them, and the marks a
// flush waits on. Not part of the public contract; exported only because
// JsonlRecordWriter's template code admits through it.
module;

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

export module jsonl.writer:admission;

export namespace jsonl::detail {

// One state word holds the accepting flag, the drain's waiting flags and the count of
// records admitted so far; the drain's count of records released is a second word. The
// depth, admitted minus released, is what the writer holds (queued, being pushed, or
// held by the drain) and never exceeds the capacity. Each admitted record gets the
// next ticket, its number in admission order: the ring slot its record goes to, free by
// then because ticket t is admitted only once the drain has released every ticket up to
// t - capacity. Thread-safe throughout.
class Admission {
 public:
  // `capacity`: the most records admitted at once (at least 1).
  // `linger`: how long an empty poll makes the drain nap (WriterOptions::linger).
  // `hold_target`: for a drain that holds records until that many wait (hold()); 0 for
  // one that never holds.
  Admission(std::size_t capacity, bool accepting, std::chrono::milliseconds linger = std::chrono::milliseconds(1),
            std::size_t hold_target = 0);

  enum class Verdict { admitted, admitted_wake_drain, refused_closed, refused_full };
  struct Reservation {
    Verdict verdict;
    std::uint64_t ticket = 0;  // when admitted: records admitted before this one

    bool admitted() const noexcept { return verdict == Verdict::admitted || verdict == Verdict::admitted_wake_drain; }
  };

  // One compare-and-swap; no lock, no system call. After storing an admitted record,
  // the submit calls wake_drain() when told to.
  Reservation reserve() noexcept;
  // Like reserve, but waits while full; refused only when closed meanwhile.
  Reservation wait_for_room() noexcept;
  // The drain has released the next `records` tickets: their slots are free again.
  // Returns how many it has released in all, these included: the mark a flush of the
  // records before them waits for.
  std::uint64_t release(std::size_t records) noexcept;

  std::uint64_t depth() const noexcept;
  // Records released so far.
  std::uint64_t released() const noexcept { return released_.load(std::memory_order_acquire); }
  bool accepting() const noexcept;
  // Refuses every later reserve and wakes the drain and waiting submits. Records
  // admitted before may still be on their way into the ring: admitted() says how many
  // tickets were handed out.
  void stop_accepting() noexcept;
  // Submits waiting for room now.
  std::uint64_t waiting() const noexcept { return waiting_.load(std::memory_order_relaxed); }

  // The drain calls this after finding the queue empty, the `empty_polls`-th time in a
  // row. While records are admitted but not yet pushed, or once closed, it returns at
  // once. Otherwise the drain naps (a submit wakes it early only once the queue is half
  // full), and after a run of empty naps sleeps until the next submit wakes it. So a
  // submit makes no system call while records keep coming, and an idle writer costs no
  // CPU.
  void await_records(unsigned empty_polls);
  void wake_drain() noexcept;
  // Ends the drain's nap now: the records a flush waits for are wanted now, not a
  // linger later. Whether the drain was napping.
  bool end_nap() noexcept;

  // Holding. The drain calls hold() when it finds fewer than hold_target() records
  // waiting and would rather append them with more: it waits until that many are
  // admitted (the submit that makes them so wakes it), a flush wants the ones it holds,
  // admission stops, or `deadline`. False at once, holding nothing, when a flush wants
  // records not yet released or admission has stopped: those are not to be held.
  bool hold(std::chrono::steady_clock::time_point deadline);
  // The target given, or half the capacity when that is less: a ring holding that many
  // still has room for more.
  std::size_t hold_target() const noexcept { return wake_depth_; }
  // For a flush of the first `records` admitted: they are not to be held, and the
  // drain's nap or hold ends now.
  void want(std::uint64_t records) noexcept;
  // Whether the drain naps, holds or sleeps now.
  bool drain_waits() const noexcept {
    return (state_.load(std::memory_order_relaxed) & (napping_bit | idle_bit)) != 0;
  }

  // Flush's marks. Records are released and their appends finished in queue order, so
  // "the first N records admitted are all written or dropped" is one number.
  // Records admitted so far: the next ticket.
  std::uint64_t admitted() const noexcept { return state_.load(std::memory_order_acquire) & count_mask; }
  // Every record up to the `released`-th is written or dropped.
  void finished_through(std::uint64_t released) noexcept;
  // Every record admitted is, and nothing more will be admitted.
  void finished_all() noexcept;
  // Waits until the first `records` admitted are finished (true), or until `deadline`.
  bool await_finished(std::uint64_t records, std::chrono::steady_clock::time_point deadline);

 private:
  static constexpr std::uint64_t accepting_bit = std::uint64_t{1} << 63;
  static constexpr std::uint64_t idle_bit = std::uint64_t{1} << 62;     // drain waits for a submit
  static constexpr std::uint64_t napping_bit = std::uint64_t{1} << 61;  // drain naps or holds; wake it at wake_depth_
  static constexpr std::uint64_t count_mask = napping_bit - 1;
  static constexpr unsigned naps_before_idle = 20;

  Reservation admit(std::uint64_t& state) noexcept;
  void announce_room() noexcept;

  const std::uint64_t capacity_;
  const std::chrono::milliseconds nap_;
  const std::uint64_t wake_depth_;  // a napping or holding drain is woken once this many wait
  alignas(64) std::atomic<std::uint64_t> state_;
  alignas(64) std::mutex drain_mutex_;
  std::condition_variable drain_wakeup_;
  alignas(64) std::atomic<std::uint32_t> room_epoch_{0};  // bumped when room may have appeared
  std::atomic<std::uint64_t> waiting_{0};
  alignas(64) std::atomic<std::uint64_t> released_{0};
  alignas(64) std::atomic<std::uint64_t> finished_through_{0};
  std::atomic<std::uint32_t> flush_waiters_{0};
  std::atomic<std::uint64_t> wanted_{0};  // records a flush wants: none of them is held
  std::mutex flush_mutex_;
  std::condition_variable flush_progress_;
};

}  // namespace jsonl::detail
