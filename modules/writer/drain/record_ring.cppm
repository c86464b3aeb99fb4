// The queue's storage: a ring of slots, one per record the writer may hold, allocated
// once with the writer. Not part of the public contract; exported only because
// JsonlRecordWriter's template code stores records in it.
module;

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

export module jsonl.writer:record_ring;

export namespace jsonl::detail {

// A submit moves its record into the slot of its admission ticket (ticket modulo the
// capacity) and marks it filled; the drain takes the filled slots in ticket order,
// serializes each record where it lies and destroys it there, then releases the tickets
// through admission, which hands a slot out again only after that. So neither side
// allocates, and a record is moved once, into its slot.
//
// Threads: put() from any number of producers at once, each with its own ticket;
// everything else on the drain side. Slots of a span taken may be consumed side by
// side, each slot by one thread.
template <class Record>
  requires std::is_nothrow_move_constructible_v<Record>
class RecordRing {
  // A slot holds a record when `filled` is its ticket + 1; zero when vacant. A cache
  // line of its own at least, so that two producers never write one line.
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> filled{0};
    alignas(Record) unsigned char storage[sizeof(Record)];

    Record& record() noexcept { return *std::launder(reinterpret_cast<Record*>(storage)); }
  };

 public:
  // The records of a run of consecutive tickets, in ticket order.
  class Span {
   public:
    Span() = default;
    std::size_t size() const noexcept { return count_; }
    Record& operator[](std::size_t i) const noexcept { return slot(i).record(); }
    // The writer is done with record `i`: destroys it where it lies.
    void consume(std::size_t i) const noexcept {
      Slot& held = slot(i);
      std::destroy_at(&held.record());
      held.filled.store(0, std::memory_order_relaxed);
    }

   private:
    friend class RecordRing;
    Span(Slot* slots, std::size_t capacity, std::size_t first, std::size_t count)
        : slots_(slots), capacity_(capacity), first_(first), count_(count) {}
    Slot& slot(std::size_t i) const noexcept {
      const std::size_t at = first_ + i;
      return slots_[at < capacity_ ? at : at - capacity_];
    }

    Slot* slots_ = nullptr;
    std::size_t capacity_ = 0;
    std::size_t first_ = 0;  // the slot of the span's first record
    std::size_t count_ = 0;
  };

  explicit RecordRing(std::size_t capacity) : capacity_(capacity), slots_(std::make_unique<Slot[]>(capacity)) {}
  RecordRing(const RecordRing&) = delete;
  RecordRing& operator=(const RecordRing&) = delete;
  ~RecordRing() { vacate(Span(slots_.get(), capacity_, 0, capacity_)); }

  // A producer admitted with `ticket` stores its record.
  void put(std::uint64_t ticket, Record&& record) noexcept {
    Slot& slot = slots_[ticket % capacity_];
    std::construct_at(&slot.record(), std::move(record));
    slot.filled.store(ticket + 1, std::memory_order_release);
  }

  // How many consecutive tickets from `first` on are filled, up to `limit`: a record
  // admitted later may be stored before one admitted earlier, and the drain takes them
  // in order.
  std::size_t filled(std::uint64_t first, std::size_t limit) const noexcept {
    std::size_t count = 0;
    while (count < limit) {
      const std::uint64_t ticket = first + count;
      if (slots_[ticket % capacity_].filled.load(std::memory_order_acquire) != ticket + 1) break;
      ++count;
    }
    return count;
  }

  // The records of tickets [first, first + count), all filled.
  Span span(std::uint64_t first, std::size_t count) noexcept {
    return Span(slots_.get(), capacity_, static_cast<std::size_t>(first % capacity_), count);
  }

  // Destroys every record of `span` not yet consumed.
  static void vacate(const Span& span) noexcept {
    for (std::size_t i = 0; i < span.size(); ++i) {
      if (span.slot(i).filled.load(std::memory_order_relaxed) != 0) span.consume(i);
    }
  }

 private:
  const std::size_t capacity_;
  const std::unique_ptr<Slot[]> slots_;
};

}  // namespace jsonl::detail
