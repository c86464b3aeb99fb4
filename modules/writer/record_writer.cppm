// JsonlRecordWriter: the bounded, non-blocking JSON Lines writer.
module;

#include <boost/json/value.hpp>
#include <tbb/concurrent_queue.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
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

export namespace jsonl {

// Lifecycle:
//   constructed  records may already be submitted; they wait in the queue.
//   start()      creates the output directory, names the file, starts the drain thread
//                and the write worker. A second call changes nothing. Without an output
//                directory, or when it cannot be created (one ERROR log, "Disabling
//                <subject> JSONL output: <error>"), the writer is disabled for good:
//                queued records are counted as abandoned, later submits as ignored.
//   close()      stops accepting, then waits up to the shutdown timeout for every record
//                accepted before it to be written. If the drain outlives the timeout (a
//                write that never returns), logs WARNING "Timed out flushing <subject>
//                JSONL; dropping remaining records", cancels the drain, counts what it
//                held as abandoned, and returns; an append already in progress may finish
//                later on its own thread. Idempotent; the destructor calls it.
//
// start(), close() and path() may be called from any thread; submit() from any number of
// threads at once, at any time. Record must be default-constructible and movable.
//
// Write latency: a drain that finds the queue empty naps (1 ms) rather than being woken
// by every submit, so a record may reach the file up to a nap after it was submitted;
// after a run of empty naps it sleeps until the next submit wakes it.
template <class Record = boost::json::value>
class JsonlRecordWriter : private GroupSerializer<Record> {
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
      engine_->log(LogLevel::warning, "Timed out flushing " + engine_->options().subject +
                                          " JSONL; dropping remaining records");
      worker_.cancel();
    }
    drain_thread_.join();
    worker_.stop();
  }

  // Records lost to a full queue, a malformed record, an unexpected serialization error,
  // or a failed write: the reference's counter. Abandoned and ignored records appear in
  // stats() only.
  std::uint64_t dropped_records() const noexcept { return engine_->dropped_records(); }

  // The file being written; empty before start() and when disabled.
  std::optional<std::filesystem::path> path() const {
    const std::lock_guard lock(lifecycle_);
    return file_;
  }

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
    drain_done_.set_value();
  }

  // Until the writer stops accepting and every record admitted before is taken.
  void drain_batches() {
    const std::size_t batch_size = engine_->options().batch_size;
    std::vector<Record> batch;
    batch.reserve(batch_size);
    Record record;
    for (unsigned empty_polls = 0;;) {
      while (batch.size() < batch_size && queue_.try_pop(record)) batch.push_back(std::move(record));
      if (batch.empty()) {
        if (!engine_->accepting() && engine_->depth() == 0) break;
        engine_->await_records(empty_polls++);
        continue;
      }
      empty_polls = 0;
      engine_->took(batch.size());
      write_batch_contained(batch);
      batch.clear();
    }
    worker_.wait_idle();
  }

  // An unexpected error anywhere in a batch's journey to the worker costs the records of
  // that batch not yet accounted for, never the drain thread. Cancellation goes through.
  void write_batch_contained(std::vector<Record>& batch) {
    accounted_ = 0;
    try {
      write_batch(batch);
    } catch (const detail::DrainCancelled&) {
      throw;
    } catch (...) {
      if (batch.size() > accounted_) {
        engine_->count_serialize_errors(batch.size() - accounted_,
                                        detail::describe_current_exception());
      }
    }
  }

  void write_batch(std::vector<Record>& batch) {
    std::vector<FileAppend> appends = layout_->lay_out(batch, *file_, *this);
    std::erase_if(appends, [](const FileAppend& append) { return append.records == 0; });
    std::size_t records = 0;
    for (const FileAppend& append : appends) records += append.records;
    if (accounted_ + records < batch.size()) {
      engine_->count_serialize_errors(batch.size() - accounted_ - records,
                                      "batch layout returned fewer lines than records");
      accounted_ = batch.size() - records;
    }
    if (!appends.empty()) worker_.hand_off({layout_, std::move(appends)});
    accounted_ = batch.size();
  }

  // Serializes a group's records in chunks, concurrently when there are several (the
  // format is thread-safe), then counts each record's outcome in submission order, so
  // the rate-limited log lines come out as they would one record at a time.
  FileAppend serialize(std::span<Record> group, std::filesystem::path file) override {
    const std::size_t chunks = (group.size() + records_per_chunk - 1) / records_per_chunk;
    std::vector<std::string> texts(chunks);
    std::vector<LineOutcome> outcomes(group.size());
    const auto serialize_chunk = [&](std::size_t chunk) {
      const std::size_t end = std::min(group.size(), (chunk + 1) * records_per_chunk);
      for (std::size_t i = chunk * records_per_chunk; i < end; ++i) {
        outcomes[i] = serialize_one(group[i], texts[chunk]);
        group[i] = Record();  // released here, in parallel, rather than with the batch
      }
    };
    if (chunks > 1) {
      tbb::parallel_for(std::size_t{0}, chunks, serialize_chunk);
    } else if (chunks == 1) {
      serialize_chunk(0);
    }

    // The first chunk's text becomes the append's; the others follow it.
    FileAppend append{std::move(file), {}, 0};
    std::size_t bytes = 0;
    for (const std::string& text : texts) bytes += text.size();
    if (!texts.empty()) append.bytes = std::move(texts.front());
    append.bytes.reserve(bytes);
    for (std::size_t chunk = 1; chunk < texts.size(); ++chunk) append.bytes += texts[chunk];
    for (const LineOutcome& outcome : outcomes) {
      switch (outcome.kind) {
        case LineOutcome::sanitized:
          engine_->count_sanitized();
          [[fallthrough]];
        case LineOutcome::written:
          ++append.records;
          continue;
        case LineOutcome::malformed:
          engine_->count_malformed(outcome.error);
          break;
        case LineOutcome::unexpected:
          engine_->count_serialize_errors(1, outcome.error);
          break;
      }
      ++accounted_;
    }
    return append;
  }

  struct LineOutcome {
    enum Kind : unsigned char { written, sanitized, malformed, unexpected } kind = written;
    std::string error;
  };

  // Appends one record's line to `text`, or nothing if it fails, and says how it went.
  LineOutcome serialize_one(Record& record, std::string& text) const {
    const std::size_t mark = text.size();
    try {
      return {format_->append_line(record, text) ? LineOutcome::sanitized : LineOutcome::written, {}};
    } catch (const std::exception& error) {
      text.resize(mark);
      if (format_->is_malformed(error)) return {LineOutcome::malformed, error.what()};
      return {LineOutcome::unexpected, detail::describe_current_exception()};
    } catch (...) {
      text.resize(mark);
      return {LineOutcome::unexpected, detail::describe_current_exception()};
    }
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
  }

  std::shared_ptr<detail::WriterEngine> engine_;
  std::shared_ptr<const RecordFormat<Record>> format_;
  std::shared_ptr<const BatchLayout<Record>> layout_;
  tbb::concurrent_bounded_queue<Record> queue_;
  detail::WriteWorker worker_;
  // Records serialized by one task: enough to outweigh handing the task to another core.
  static constexpr std::size_t records_per_chunk = 32;

  std::size_t accounted_ = 0;  // drain thread: records of the current batch counted or queued to write

  mutable std::mutex lifecycle_;
  Phase phase_ = Phase::created;
  std::optional<std::filesystem::path> file_;
  std::promise<void> drain_done_;
  std::future<void> drain_finished_;
  std::thread drain_thread_;
};

}  // namespace jsonl
