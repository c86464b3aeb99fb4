// JsonlRecordWriter: the bounded, non-blocking JSON Lines writer. A front end: admission
// and the queue on the producer's side, a drain thread (Drain) that serializes, and a
// write side (WriteSide) that knows only bytes and sinks.
module;

#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

export module jsonl.writer:record_writer;

import :log;
import :options;
import :stats;
import :format;
import :format_for;
import :route;
import :sink;
import :admission;
import :writer_state;
import :write_side;
import :drain;

export namespace jsonl {

// Lifecycle:
//   constructed  records may already be submitted; they wait in the queue.
//   start()      creates the output directory, names the file, starts the drain thread
//                and the write worker. A second call changes nothing. Without an output
//                directory (for a sink that writes files), or when it cannot be
//                created (one ERROR log, "Disabling
//                <subject> JSONL output: <error>", or as WriterOptions::wording names
//                the output), the writer is disabled for good:
//                queued records are counted as abandoned, later submits as ignored.
//   close()      stops accepting, then waits up to the shutdown timeout for every record
//                accepted before it to be written. If the drain outlives the timeout (a
//                write that never returns), logs WARNING "Timed out flushing <subject>
//                JSONL; dropping remaining records" (or as worded), cancels the drain,
//                counts what it held as abandoned, and returns; an append already in
//                progress may finish later on its own thread (with durability, its
//                records count as unknown). With durability it then publishes the
//                closed books, waiting up to the shutdown timeout again (WARNING "Timed
//                out publishing the closed <subject> JSONL books" otherwise).
//                Idempotent; the destructor calls it.
//   flush(t)     while running: ends the drain's nap (WriterOptions::linger) and its
//                hold of records (WriterOptions::hold_for), then waits
//                until every record accepted before the call is written or dropped, or
//                for at most t, and says which. With durability,
//                written means persisted, and the books are then published if they
//                changed.
//
// start(), close(), flush() and path() may be called from any thread; submit() from any
// number of threads at once, at any time.
//
// Storage: the queue is a ring of `queue_size` slots, each the size of a Record,
// allocated with the writer. A submit moves its record into a slot and the drain
// serializes it there: in steady state neither allocates. Record must be nothrow
// move-constructible.
//
// Write latency: a drain that finds the queue empty naps (1 ms) rather than being woken
// by every submit, so a record may reach the file up to a nap after it was submitted;
// after a run of empty naps it sleeps until the next submit wakes it. Under load a record
// also waits for the round it was taken in (up to 16 batches, at most a quarter of the
// queue size) to be serialized before its batch is appended. A writer that holds
// (WriterOptions::hold_for; compressed ones by default) keeps fewer than a round for up
// to that long.
template <class Record = boost::json::value>
  requires std::is_nothrow_move_constructible_v<Record>
class JsonlRecordWriter {
 public:
  // `format`: how a record becomes a line (format_for<Record> when empty, if it has one).
  // `sink`: where appends go (a FileSink through options.durability.calls when empty).
  // A sink that writes no files (Sink::writes_files) takes no output directory: it gets
  // every append as it comes (FileAppend::file empty, or as the route names it), and the
  // options may not ask for rotation; with durability, they name its books directory.
  // Durability is refused for a sink that cannot be made durable.
  // `route`: which file each record goes to (the writer's own file when empty).
  // Throws std::invalid_argument for unusable options (see WriterOptions), or when no
  // format is given and Record has no default format (format_for).
  explicit JsonlRecordWriter(WriterOptions options,
                             std::shared_ptr<const RecordFormat<Record>> format = default_format(),
                             std::shared_ptr<Sink> sink = nullptr,
                             std::shared_ptr<const RecordRoute<Record>> route = nullptr)
      : state_(std::make_shared<detail::WriterState>(std::move(options), traits_of(sink.get()))),
        write_side_(state_, std::move(sink)),
        drain_(state_, write_side_, checked(std::move(format)), std::move(route)) {}

  JsonlRecordWriter(const JsonlRecordWriter&) = delete;
  JsonlRecordWriter& operator=(const JsonlRecordWriter&) = delete;

  ~JsonlRecordWriter() { close(); }

  // See the lifecycle above. Blocks for the directory creation only.
  void start() {
    const std::lock_guard lock(lifecycle_);
    if (phase_ != Phase::created) return;
    if (!write_side_.start()) {
      phase_ = Phase::closed;
      state_->admission.stop_accepting();
      drain_.abandon_queued();
      return;
    }
    drain_finished_ = drain_done_.get_future();
    drain_thread_ = state_->launch([this] {
      drain_.run();
      drain_done_.set_value();
    });
    phase_ = Phase::running;
  }

  // Moves `record` into the queue and returns true, or returns false, leaving `record`
  // with the caller, when the writer is not accepting (counted as ignored) or its queue is
  // full (the newest record, this one, is dropped and counted; WARNING "Dropped <n>
  // <subject> records" when the shared dropped_records() counter reaches 1 or a multiple
  // of 1000). Never blocks, never throws, does no I/O of its own (the log sink is called
  // for that rate-limited warning), and makes no system call while the writer is busy:
  // an idle drain is woken by the first record after a pause.
  bool submit(Record&& record) noexcept { return store(state_->admission.reserve(), record); }

  // For batch producers that must not lose records to a full queue: like submit, but
  // while the queue is full it blocks until the drain makes room, and counts no drop.
  // Returns false (counted as ignored) if the writer is not accepting, or stops
  // accepting while it waits (close() wakes it). Do not call it on a thread that
  // close() must not wait for, and not before start() on a full queue unless another
  // thread will start or close the writer.
  bool submit_wait(Record&& record) noexcept { return store(state_->admission.wait_for_room(), record); }

  // See the lifecycle above. Blocks at most the shutdown timeout plus the time to join
  // the drain thread once cancelled.
  void close() {
    const std::lock_guard lock(lifecycle_);
    if (phase_ == Phase::closed) return;
    state_->admission.stop_accepting();
    if (phase_ == Phase::created) {
      phase_ = Phase::closed;
      drain_.abandon_queued();
      return;
    }
    phase_ = Phase::closed;
    const WriterOptions& options = state_->options;
    if (drain_finished_.wait_for(options.shutdown_timeout) != std::future_status::ready) {
      const std::string& name = options.wording.flushed;
      state_->accounts.log(LogLevel::warning, "Timed out flushing " +
                                                  (name.empty() ? options.subject + " JSONL" : name) +
                                                  "; dropping remaining records");
      write_side_.cancel();
    }
    drain_thread_.join();
    write_side_.stop();
    if (write_side_.durable()) write_side_.publish_closed(options.shutdown_timeout);
  }

  // Returns true once every record accepted before the call (its submit returned true)
  // is written or counted as dropped, false when `timeout` passes first; the records
  // still go on their way. Records go through the writer in order, so this waits for
  // no record accepted later. Blocks only the caller: never a submit, the drain or the
  // write worker. Safe beside close() and other flushes. Before start() nothing is
  // written: it waits until start() or close() does its part, or the timeout. After
  // close() returns it returns true at once. With durability, the publication that
  // follows takes as long as the filesystem does.
  [[nodiscard]] bool flush(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const std::uint64_t records = state_->admission.admitted();
    state_->admission.want(records);
    if (!state_->admission.await_finished(records, deadline)) return false;
    if (write_side_.durable()) write_side_.publish(true);
    return true;
  }

  // Records lost to a full queue, a malformed record, an unexpected serialization error,
  // or a failed write: the reference's counter. Abandoned and ignored records, and with
  // durability unknown ones, appear in stats() only.
  std::uint64_t dropped_records() const noexcept { return state_->accounts.dropped_records(); }

  // The file being written now (rotation replaces it); empty before start() and when
  // disabled.
  std::optional<std::filesystem::path> path() const { return write_side_.current_file(); }

  // With durability, where the books are published ("<output_dir>/_writer/<generation>.json",
  // or in the books directory of a sink that writes no files); empty otherwise.
  std::optional<std::filesystem::path> books_file() const { return write_side_.books_file(); }

  // A snapshot of the counters (see WriterStats). Thread-safe, lock-free, never blocks.
  WriterStats stats() const noexcept { return state_->stats(); }

 private:
  enum class Phase { created, running, closed };

  // Moves `record` into its slot once admitted; counts a refusal.
  bool store(detail::Admission::Reservation reservation, Record& record) noexcept {
    using enum detail::Admission::Verdict;
    if (reservation.verdict == refused_closed) {
      state_->accounts.ignored();
      return false;
    }
    if (reservation.verdict == refused_full) {
      state_->accounts.queue_full();
      return false;
    }
    drain_.push(reservation.ticket, std::move(record));
    if (reservation.verdict == admitted_wake_drain) state_->admission.wake_drain();
    return true;
  }

  static std::shared_ptr<const RecordFormat<Record>> default_format() {
    if constexpr (has_default_format<Record>) {
      return std::make_shared<typename format_for<Record>::type>();
    } else {
      return nullptr;
    }
  }

  // No sink: the default FileSink.
  static detail::SinkTraits traits_of(const Sink* sink) noexcept {
    if (!sink) return {};
    return {.own_destination = !sink->writes_files(), .can_be_made_durable = sink->can_be_made_durable()};
  }

  static std::shared_ptr<const RecordFormat<Record>> checked(std::shared_ptr<const RecordFormat<Record>> format) {
    if (!format) throw std::invalid_argument("a record format is required");
    return format;
  }

  std::shared_ptr<detail::WriterState> state_;
  detail::WriteSide write_side_;
  detail::Drain<Record> drain_;

  std::mutex lifecycle_;
  Phase phase_ = Phase::created;
  std::promise<void> drain_done_;
  std::future<void> drain_finished_;
  std::thread drain_thread_;
};

}  // namespace jsonl
