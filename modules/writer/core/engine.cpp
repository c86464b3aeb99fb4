module;

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cxxabi.h>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>
#include <typeinfo>

module jsonl.writer;

import :engine;

namespace jsonl::detail {
namespace {

std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> readable(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                                  std::free);
  return status == 0 && readable ? std::string(readable.get()) : std::string(name);
}

void validate(const WriterOptions& options) {
  const std::string& stem = options.file_stem;
  if (stem.empty() || stem == "." || stem == ".." ||
      stem.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
    throw std::invalid_argument("file stem must name a file inside the output directory: \"" +
                                stem + "\"");
  }
  if (options.queue_size == 0) throw std::invalid_argument("queue size must be at least 1");
  if (options.batch_size == 0) throw std::invalid_argument("batch size must be at least 1");
  if (options.shutdown_timeout.count() < 0) {
    throw std::invalid_argument("shutdown timeout must not be negative");
  }
  if (options.max_file_bytes && *options.max_file_bytes == 0) {
    throw std::invalid_argument("max file bytes must be positive");
  }
  if (options.max_file_age && options.max_file_age->count() <= 0) {
    throw std::invalid_argument("max file age must be positive");
  }
  if (options.max_files && *options.max_files == 0) throw std::invalid_argument("max files must be at least 1");
  if (!options.clock) throw std::invalid_argument("a clock is required");
  if (options.durability.publish_interval.count() <= 0) {
    throw std::invalid_argument("publish interval must be positive");
  }
  if (!options.durability.calls) throw std::invalid_argument("durability needs its file calls");
}

}  // namespace

std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::exception& error) {
    return demangle(typeid(error).name()) + ": " + error.what();
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return (type ? demangle(type->name()) : std::string("unknown exception")) +
           ": (not a std::exception)";
  }
}

WriterEngine::WriterEngine(WriterOptions options) : options_(std::move(options)), output_(options_) {
  validate(options_);
  if (options_.durability.enabled && options_.output_dir) books_.emplace(options_);
  state_.store(options_.output_dir ? accepting_bit : 0, std::memory_order_relaxed);
}

// One attempt-loop of admission from `state` (the last value seen). Refuses without
// writing the state word: a stopped writer or a full queue costs a load, not a
// contended read-modify-write.
WriterEngine::Admission WriterEngine::admit(std::uint64_t& state) noexcept {
  for (;;) {
    if ((state & accepting_bit) == 0 || (state & depth_mask) >= options_.queue_size) {
      return Admission::refused;
    }
    const std::uint64_t depth = (state & depth_mask) + 1;
    const bool wake = (state & idle_bit) != 0 ||
                      ((state & napping_bit) != 0 && depth >= (options_.queue_size + 1) / 2);
    const std::uint64_t next = wake ? (state + 1) & ~(idle_bit | napping_bit) : state + 1;
    if (state_.compare_exchange_weak(state, next, std::memory_order_relaxed)) {
      return wake ? Admission::admitted_wake_drain : Admission::admitted;
    }
  }
}

WriterEngine::Admission WriterEngine::reserve_slot() noexcept {
  std::uint64_t state = state_.load(std::memory_order_relaxed);
  const Admission admission = admit(state);
  if (admission != Admission::refused) return admission;
  if ((state & accepting_bit) == 0) {
    ignored_.fetch_add(1, std::memory_order_relaxed);
    return admission;
  }
  queue_full_.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t dropped = dropped_records_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (at_log_point(dropped)) {
    log(LogLevel::warning,
        "Dropped " + std::to_string(dropped) + " " + options_.subject + " records");
  }
  return admission;
}

WriterEngine::Admission WriterEngine::wait_for_slot() noexcept {
  bool waiting = false;
  for (;;) {
    const std::uint32_t epoch = room_epoch_.load(std::memory_order_acquire);
    std::uint64_t state = state_.load(std::memory_order_relaxed);
    const Admission admission = admit(state);
    if (admission != Admission::refused || (state & accepting_bit) == 0) {
      if (waiting) waiting_.fetch_sub(1, std::memory_order_relaxed);
      if (admission == Admission::refused) ignored_.fetch_add(1, std::memory_order_relaxed);
      return admission;
    }
    if (!waiting) waiting_.fetch_add(1, std::memory_order_relaxed);
    waiting = true;
    room_epoch_.wait(epoch, std::memory_order_acquire);
  }
}

void WriterEngine::announce_room() noexcept {
  room_epoch_.fetch_add(1, std::memory_order_release);
  room_epoch_.notify_all();
}

void WriterEngine::refuse_reserved() noexcept {
  state_.fetch_sub(1, std::memory_order_relaxed);
  queue_full_.fetch_add(1, std::memory_order_relaxed);
  dropped_records_.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t WriterEngine::took(std::size_t records) noexcept {
  std::uint64_t depth;
  std::uint64_t taken;
  {
    const std::lock_guard lock(took_mutex_);
    depth = (state_.fetch_sub(records, std::memory_order_relaxed) & depth_mask) - records;
    taken = taken_.fetch_add(records, std::memory_order_relaxed) + records;
  }
  // Waiting submits are woken once the queue is half empty, not after every batch: they
  // then refill it in one go instead of trading the cores with the drain batch by batch.
  if (depth <= options_.queue_size / 2) announce_room();
  return taken;
}

std::uint64_t WriterEngine::accepted() const noexcept {
  const std::lock_guard lock(took_mutex_);
  return taken_.load(std::memory_order_relaxed) + depth();
}

void WriterEngine::finished_through(std::uint64_t taken) noexcept {
  std::uint64_t finished = finished_through_.load();
  while (finished < taken && !finished_through_.compare_exchange_weak(finished, taken)) {
  }
  // A waiter registers before it checks the mark, so either it sees the new mark or
  // this sees it waiting.
  if (flush_waiters_.load() != 0) {
    { const std::lock_guard lock(flush_mutex_); }
    flush_progress_.notify_all();
  }
}

void WriterEngine::finished_all() noexcept { finished_through(UINT64_MAX); }

bool WriterEngine::await_finished(std::uint64_t records, std::chrono::steady_clock::time_point deadline) {
  flush_waiters_.fetch_add(1);
  std::unique_lock lock(flush_mutex_);
  const bool finished = flush_progress_.wait_until(lock, deadline, [&] { return finished_through_.load() >= records; });
  lock.unlock();
  flush_waiters_.fetch_sub(1);
  return finished;
}

std::uint64_t WriterEngine::depth() const noexcept {
  return state_.load(std::memory_order_relaxed) & depth_mask;
}

bool WriterEngine::accepting() const noexcept {
  return (state_.load(std::memory_order_relaxed) & accepting_bit) != 0;
}

void WriterEngine::stop_accepting() noexcept {
  state_.fetch_and(~accepting_bit, std::memory_order_acq_rel);
  announce_room();  // wakes waiting submits, which now see the writer closed
  wake_drain();
}

void WriterEngine::await_records(unsigned empty_polls) {
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

void WriterEngine::wake_drain() noexcept {
  // Taking the mutex orders this wake-up after the drain's check of its bit, so the
  // notification cannot fall between that check and the wait.
  { const std::lock_guard lock(drain_mutex_); }
  drain_wakeup_.notify_one();
}

std::optional<std::filesystem::path> WriterEngine::open_output() {
  if (!options_.output_dir) return std::nullopt;
  const std::filesystem::path& directory = *options_.output_dir;
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (!error && !std::filesystem::is_directory(directory, error) && !error) {
    error = std::make_error_code(std::errc::not_a_directory);
  }
  if (error) {
    const std::string& name = options_.wording.disabled;
    log(LogLevel::error, "Disabling " + (name.empty() ? options_.subject + " JSONL" : name) +
                             " output: cannot create directory '" +
                             directory.string() + "': " + error.message());
    return std::nullopt;
  }
  return output_.start();
}

std::filesystem::path WriterEngine::file_for_append(std::size_t bytes) {
  OutputFile::Deletions deletions;
  std::filesystem::path file = output_.file_for(bytes, deletions);
  if (books_) {
    deleted_files_.insert(deleted_files_.end(), deletions.deleted.begin(), deletions.deleted.end());
  }
  for (const std::string& failure : deletions.failed) {
    log(LogLevel::warning, "Could not delete old " + options_.subject + " JSONL file " + failure);
  }
  return file;
}

void WriterEngine::count_sanitized() {
  const std::uint64_t sanitized = sanitized_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (at_log_point(sanitized)) {
    log(LogLevel::warning, "Sanitized " + std::to_string(sanitized) + " " + options_.subject +
                               " records carrying unencodable text");
  }
}

void WriterEngine::count_malformed(std::string_view error) {
  malformed_.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t dropped = dropped_records_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (at_log_point(dropped)) {
    log(LogLevel::warning,
        "Dropped malformed " + options_.subject + " record: " + std::string(error));
  }
}

void WriterEngine::count_serialize_errors(std::size_t records, std::string_view description) {
  count_unexpected(serialize_errors_, records, "serializing " + options_.subject + " record", description);
}

void WriterEngine::count_abandoned(std::size_t records) noexcept {
  abandoned_.fetch_add(records, std::memory_order_relaxed);
}

void WriterEngine::count_written(const std::filesystem::path& file, std::size_t records, const AppendResult& result) {
  if (result.recreated_directory) {
    directories_recreated_.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::warning, "Recreated the missing " + options_.subject + " JSONL directory '" +
                               file.parent_path().string() + "'");
  }
  if (lost_in_run_ != 0) {
    log(LogLevel::warning, "Resumed writing " + options_.subject + " JSONL after " + std::to_string(lost_in_run_) +
                               " records were lost");
    run_warned_ = false;
    lost_in_run_ = 0;
  }
  written_.fetch_add(records, std::memory_order_relaxed);
  lines_.fetch_add(result.lines, std::memory_order_relaxed);
  bytes_.fetch_add(result.bytes, std::memory_order_relaxed);
  appends_.fetch_add(1, std::memory_order_relaxed);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  last_append_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(),
                        std::memory_order_relaxed);
}

void WriterEngine::count_serialized(std::size_t records, bool side_by_side) noexcept {
  (side_by_side ? serialized_side_by_side_ : serialized_alone_).fetch_add(records, std::memory_order_relaxed);
}

void WriterEngine::count_write_error(std::size_t records, std::string_view error) {
  write_errors_.fetch_add(records, std::memory_order_relaxed);
  dropped_records_.fetch_add(records, std::memory_order_relaxed);
  lost_in_run_ += records;
  if (!run_warned_) {
    run_warned_ = true;
    log(LogLevel::warning, "Failed to write " + options_.subject + " JSONL: " + std::string(error));
  }
}

void WriterEngine::count_unexpected_write(std::size_t records, std::string_view description) {
  lost_in_run_ += records;
  count_unexpected(unexpected_writes_, records, "writing " + options_.subject + " JSONL", description);
}

void WriterEngine::count_unexpected(UnexpectedErrors& stage, std::size_t records, const std::string& doing,
                                    std::string_view description) {
  stage.records.fetch_add(records, std::memory_order_relaxed);
  dropped_records_.fetch_add(records, std::memory_order_relaxed);
  const std::uint64_t events = stage.events.fetch_add(1, std::memory_order_relaxed) + 1;
  if (at_log_point(events)) {
    log(LogLevel::error, "Unexpected error " + doing + " (" + std::to_string(events) + " so far): " +
                             std::string(description));
  }
}

std::uint64_t WriterEngine::dropped_records() const noexcept {
  return dropped_records_.load(std::memory_order_relaxed);
}

WriterStats WriterEngine::stats() const noexcept {
  const auto load = [](const std::atomic<std::uint64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  };
  WriterStats stats;
  stats.written = load(written_);
  stats.dropped_queue_full = load(queue_full_);
  stats.dropped_malformed = load(malformed_);
  stats.dropped_serialize_error = load(serialize_errors_.records);
  stats.dropped_write_error = load(write_errors_);
  stats.dropped_unexpected_write = load(unexpected_writes_.records);
  stats.abandoned = load(abandoned_);
  stats.ignored = load(ignored_);
  stats.sanitized = load(sanitized_);
  stats.lines_written = load(lines_);
  stats.bytes_written = load(bytes_);
  stats.appends = load(appends_);
  stats.serialized_side_by_side = load(serialized_side_by_side_);
  stats.serialized_alone = load(serialized_alone_);
  stats.files_started = output_.files_started();
  stats.directories_recreated = load(directories_recreated_);
  stats.unknown = load(unknown_);
  if (books_) {
    stats.publications = books_->publications();
    stats.publication_errors = books_->publication_errors();
  }
  stats.queue_depth = depth();
  stats.waiting_for_room = load(waiting_);
  stats.submitted = stats.ignored + stats.dropped_queue_full + load(taken_) + stats.queue_depth;
  if (const std::int64_t ns = last_append_ns_.load(std::memory_order_relaxed); ns != 0) {
    stats.last_append = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns)));
  }
  return stats;
}

void WriterEngine::log(LogLevel level, std::string_view message) const noexcept {
  try {
    if (options_.log_sink) options_.log_sink(level, message);
  } catch (...) {
    // A failing sink must not take the writer down with it.
  }
}

}  // namespace jsonl::detail
