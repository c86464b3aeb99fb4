// What the writer's front end, its drain and its write side share: the options, the
// admission state and the counters, in one place. Not part of the public contract;
// exported only because JsonlRecordWriter's template code uses it.
module;

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <thread>

export module jsonl.writer:writer_state;

import :options;
import :stats;
import :accounts;
import :admission;

export namespace jsonl::detail {

// Thrown on the drain thread when `close` gives up waiting for it. Deliberately not a
// std::exception: error containment that catches everything must rethrow it, or the
// drain would go on after close returned.
struct DrainCancelled {};

// "<type>: <what>" for an exception in flight (inside a catch block).
std::string describe_current_exception();

// What the configuration's sink says of itself; the default sink writes files and can be
// made durable.
struct SinkTraits {
  // It writes no files (Sink::writes_files): it takes no output directory, so no
  // rotation, and with durability a books directory.
  bool own_destination = false;
  bool can_be_made_durable = true;  // Sink::can_be_made_durable
};

struct WriterState {
  // Throws std::invalid_argument for unusable options (see WriterOptions), and for
  // options the sink cannot honour.
  WriterState(WriterOptions options, SinkTraits sink);

  const WriterOptions options;
  Admission admission;
  Accounts accounts;

  // Batches the drain takes in one round when that many wait: up to 16, and a quarter
  // of the queue (at least one batch).
  std::size_t round_batches() const noexcept {
    return std::max<std::size_t>(1, std::min<std::size_t>(options.queue_size / 4 / options.batch_size, 16));
  }
  // How long the drain may hold records for more (WriterOptions::hold_for, or its
  // default), and whether it holds any.
  std::chrono::milliseconds hold_for() const noexcept;
  bool holds_records() const noexcept { return hold_for().count() > 0; }
  // The records a holding drain waits for: a round's, so that a commit and the wake-ups
  // of the writer's threads carry as many records as a round can (compressed, a fuller
  // piece too).
  std::size_t hold_target() const noexcept;
  // Every counter: the accounts' and what admission knows.
  WriterStats stats() const noexcept;
  // A thread of the writer's: the options' on_thread_start, then `body`. What `body`
  // captures must keep this state alive while the thread runs.
  std::thread launch(std::function<void()> body) const;
  // The books' view, read so that it balances: `submitted` counts the records accepted
  // or refused for a full queue (not those ignored), read after everything classified.
  WriterStats books_view() const noexcept;
};

}  // namespace jsonl::detail
