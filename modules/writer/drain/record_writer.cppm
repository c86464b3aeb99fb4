// JsonlRecordWriter: the bounded, non-blocking JSON Lines writer.
module;

#include <boost/json/value.hpp>
#include <tbb/concurrent_queue.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <future>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

export module jsonl.writer:record_writer;

import :log;
import :options;
import :stats;
import :format;
import :layout;
import :engine;
import :batch_serializer;
import :serialization_planner;

export namespace jsonl {

// Lifecycle:
//   constructed  records may already be submitted; they wait in the queue.
//   start()      creates the output directory, names the file, starts the drain thread
//                and the write worker. A second call changes nothing. Without an output
//                directory, or when it cannot be created (one ERROR log, "Disabling
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
//   flush(t)     while running: waits until every record accepted before the call is
//                written or dropped, or for at most t, and says which. With durability,
//                written means persisted, and the books are then published if they
//                changed.
//
// start(), close(), flush() and path() may be called from any thread; submit() from any
// number of threads at once, at any time. Record must be default-constructible and movable.
//
// Write latency: a drain that finds the queue empty naps (1 ms) rather than being woken
// by every submit, so a record may reach the file up to a nap after it was submitted;
// after a run of empty naps it sleeps until the next submit wakes it. Under load a record
// also waits for the round it was taken in (up to 16 batches, at most a quarter of the
// queue size) to be serialized before its batch is appended.
template <class Record = boost::json::value>
class JsonlRecordWriter {
 public:
  // Throws std::invalid_argument for unusable options (see WriterOptions), or when no
  // format is given and Record has no default format (only boost::json::value has one).
  explicit JsonlRecordWriter(
      WriterOptions options,
      std::shared_ptr<const RecordFormat<Record>> format = default_format(),
      std::shared_ptr<const BatchLayout<Record>> layout = std::make_shared<BatchLayout<Record>>())
      : engine_(std::make_shared<detail::WriterEngine>(std::move(options))),
        format_(std::move(format)),
        layout_(std::move(layout)),
        worker_(engine_) {
    if (!format_) throw std::invalid_argument("a record format is required");
    if (!layout_) throw std::invalid_argument("a batch layout is required");
    queue_.set_capacity(static_cast<std::ptrdiff_t>(engine_->options().queue_size));
  }

  JsonlRecordWriter(const JsonlRecordWriter&) = delete;
  JsonlRecordWriter& operator=(const JsonlRecordWriter&) = delete;

  ~JsonlRecordWriter() { close(); }

  // See the lifecycle above. Blocks for the directory creation only.
  void start() {
    const std::lock_guard lock(lifecycle_);
    if (phase_ != Phase::created) return;
    file_ = engine_->open_output();
    if (!file_) {
      phase_ = Phase::closed;
      engine_->stop_accepting();
      abandon_queued();
      return;
    }
    worker_.start();
    drain_finished_ = drain_done_.get_future();
    drain_thread_ = std::thread([this] { drain(); });
    phase_ = Phase::running;
  }

  // Moves `record` into the queue and returns true, or returns false, leaving `record`
  // with the caller, when the writer is not accepting (counted as ignored) or its queue is
  // full (the newest record, this one, is dropped and counted; WARNING "Dropped <n>
  // <subject> records" when the shared dropped_records() counter reaches 1 or a multiple
  // of 1000). Never blocks, never throws, does no I/O of its own (the log sink is called
  // for that rate-limited warning), and makes no system call while the writer is busy:
  // an idle drain is woken by the first record after a pause.
  bool submit(Record&& record) noexcept {
    return enqueue<&detail::WriterEngine::reserve_slot>(record);
  }

  // For batch producers that must not lose records to a full queue: like submit, but
  // while the queue is full it blocks until the drain makes room, and counts no drop.
  // Returns false (counted as ignored) if the writer is not accepting, or stops
  // accepting while it waits (close() wakes it). Do not call it on a thread that
  // close() must not wait for, and not before start() on a full queue unless another
  // thread will start or close the writer.
  bool submit_wait(Record&& record) noexcept {
    return enqueue<&detail::WriterEngine::wait_for_slot>(record);
  }

  // See the lifecycle above. Blocks at most the shutdown timeout plus the time to join
  // the drain thread once cancelled.
  void close() {
    const std::lock_guard lock(lifecycle_);
    if (phase_ == Phase::closed) return;
    engine_->stop_accepting();
    if (phase_ == Phase::created) {
      phase_ = Phase::closed;
      abandon_queued();
      return;
    }
    phase_ = Phase::closed;
    if (drain_finished_.wait_for(engine_->options().shutdown_timeout) !=
        std::future_status::ready) {
      const WriterOptions& options = engine_->options();
      const std::string& name = options.wording.flushed;
      engine_->log(LogLevel::warning, "Timed out flushing " + (name.empty() ? options.subject + " JSONL" : name) +
                                          "; dropping remaining records");
      worker_.cancel();
    }
    drain_thread_.join();
    worker_.stop();
    if (engine_->durable()) engine_->publish_closed_books(engine_->options().shutdown_timeout);
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
    if (!engine_->await_finished(engine_->accepted(), deadline)) return false;
    if (engine_->durable()) engine_->publish_books(true);
    return true;
  }

  // Records lost to a full queue, a malformed record, an unexpected serialization error,
  // or a failed write: the reference's counter. Abandoned and ignored records, and with
  // durability unknown ones, appear in stats() only.
  std::uint64_t dropped_records() const noexcept { return engine_->dropped_records(); }

  // The file being written now (rotation replaces it); empty before start() and when
  // disabled.
  std::optional<std::filesystem::path> path() const { return engine_->current_file(); }

  // With durability and an output directory, where the books are published
  // ("<output_dir>/_writer/<generation>.json"); empty otherwise.
  std::optional<std::filesystem::path> books_file() const { return engine_->books_file(); }

  // A snapshot of the counters (see WriterStats). Thread-safe, lock-free, never blocks.
  WriterStats stats() const noexcept { return engine_->stats(); }

 private:
  enum class Phase { created, running, closed };
  using Admission = detail::WriterEngine::Admission;

  // Moves `record` into the queue once `claim` has admitted it.
  template <Admission (detail::WriterEngine::*claim)() noexcept>
  bool enqueue(Record& record) noexcept {
    const Admission admission = (engine_.get()->*claim)();
    if (admission == Admission::refused) return false;
    bool pushed = false;
    try {
      queue_.push(std::move(record));
      pushed = true;
    } catch (...) {
      engine_->refuse_reserved();
    }
    if (admission == Admission::admitted_wake_drain) engine_->wake_drain();
    return pushed;
  }

  static std::shared_ptr<const RecordFormat<Record>> default_format() {
    if constexpr (std::is_same_v<Record, boost::json::value>) {
      return std::make_shared<JsonLineFormat>();
    } else {
      return nullptr;
    }
  }

  void drain() noexcept {
    try {
      drain_batches();
    } catch (const detail::DrainCancelled&) {
      abandon_queued();
    }
    engine_->finished_all();
    drain_done_.set_value();
  }

  // Until the writer stops accepting and every record admitted before is taken.
  void drain_batches() {
    std::vector<std::vector<Record>> round;
    for (unsigned empty_polls = 0;;) {
      const std::size_t records = take_round(round);
      if (records == 0) {
        if (!engine_->accepting() && engine_->depth() == 0) break;
        engine_->await_records(empty_polls++);
        continue;
      }
      empty_polls = 0;
      write_round_contained(round, records);
      round.clear();
    }
    worker_.wait_idle();
  }

  // Pops whole batches while records are waiting, up to batches_per_round and a quarter
  // of the queue's capacity (at least one batch): one round of serializing for all of
  // them rather than one per batch.
  std::size_t take_round(std::vector<std::vector<Record>>& round) {
    const WriterOptions& options = engine_->options();
    const std::size_t batch_size = options.batch_size;
    const std::size_t batches = std::clamp<std::size_t>(options.queue_size / 4 / batch_size, 1, batches_per_round);
    std::size_t records = 0;
    Record record;
    while (round.size() < batches) {
      std::vector<Record> batch;
      while (batch.size() < batch_size && queue_.try_pop(record)) batch.push_back(std::move(record));
      if (batch.empty()) break;
      records += batch.size();
      round.push_back(std::move(batch));
      if (round.back().size() < batch_size) break;
    }
    return records;
  }

  // An unexpected error anywhere in a round's journey to the worker costs the records of
  // that round not yet accounted for, never the drain thread. Cancellation goes through.
  // The round's records leave the queue's depth only once released, so that the
  // capacity bounds every record the writer holds, the drain's included. Releasing
  // returns the records taken in all, the mark a flush waits for the worker to pass.
  void write_round_contained(std::vector<std::vector<Record>>& round, std::size_t records) {
    std::optional<std::uint64_t> through;
    const auto release = [&] {
      if (!through) {
        round.clear();
        through = engine_->took(records);
      }
      return *through;
    };
    std::size_t accounted = 0;
    try {
      write_round(round, records, accounted, release);
      return;
    } catch (const detail::DrainCancelled&) {
      release();
      throw;
    } catch (...) {
      release();
      if (records > accounted) {
        engine_->count_serialize_errors(records - accounted, detail::describe_current_exception());
      }
    }
    // Nothing of the round reaches the worker, but flush's mark must pass it in order.
    worker_.hand_off(detail::WriteJob{layout_, {}, *file_, *through});
  }

  // Serializes the round's batches, alone or side by side as the planner says, releases
  // the records, counts the batches in submission order, and hands all their appends to
  // the write worker in one job. `accounted` ends as the records of the round handed off
  // or dropped. The planner is told how long all of it took, waiting for the worker
  // included: serializing side by side also slows the worker down when the cores are short.
  template <class Release>
  void write_round(std::vector<std::vector<Record>>& round, std::size_t records, std::size_t& accounted,
                   const Release& release) {
    using Mode = detail::SerializationPlanner::Mode;
    const Mode mode = planner_.plan(records);
    const auto began = std::chrono::steady_clock::now();
    std::vector<detail::SerializedBatch> batches(round.size());
    const auto serialize_batch = [&](std::size_t i) {
      detail::BatchSerializer<Record>(*format_, batches[i], mode == Mode::side_by_side).run(*layout_, round[i], *file_);
    };
    if (mode == Mode::side_by_side && round.size() > 1) {
      tbb::parallel_for(std::size_t{0}, round.size(), serialize_batch);
    } else {
      for (std::size_t i = 0; i < round.size(); ++i) serialize_batch(i);
    }
    detail::WriteJob job{layout_, {}, *file_, release()};
    std::size_t in_appends = 0;
    for (detail::SerializedBatch& batch : batches) {
      in_appends += batch.count(*engine_, accounted);
      std::move(batch.appends.begin(), batch.appends.end(), std::back_inserter(job.appends));
    }
    // Handed off even when empty: the worker passes flush's mark in order.
    worker_.hand_off(std::move(job));
    accounted += in_appends;
    planner_.measured(mode, records, std::chrono::steady_clock::now() - began);
    engine_->count_serialized(records, mode == Mode::side_by_side);
  }

  // Counts every record admitted and not yet taken as abandoned, waiting for pushes still
  // in progress. Only after stop_accepting(), and not beside a running drain.
  void abandon_queued() noexcept {
    std::size_t records = 0;
    for (Record record;;) {
      while (queue_.try_pop(record)) ++records;
      if (engine_->depth() == records) break;
      std::this_thread::yield();
    }
    engine_->took(records);
    engine_->count_abandoned(records);
    engine_->finished_all();
  }

  std::shared_ptr<detail::WriterEngine> engine_;
  std::shared_ptr<const RecordFormat<Record>> format_;
  std::shared_ptr<const BatchLayout<Record>> layout_;
  tbb::concurrent_bounded_queue<Record> queue_;
  detail::WriteWorker worker_;
  // Batches serialized in one round, when that many are waiting.
  static constexpr std::size_t batches_per_round = 16;
  detail::SerializationPlanner planner_;  // drain thread only

  std::mutex lifecycle_;
  Phase phase_ = Phase::created;
  // The first file's name, set by start() before the drain starts: the layout addresses
  // the writer's file by it, and the write worker maps it to the current file.
  std::optional<std::filesystem::path> file_;
  std::promise<void> drain_done_;
  std::future<void> drain_finished_;
  std::thread drain_thread_;
};

}  // namespace jsonl
