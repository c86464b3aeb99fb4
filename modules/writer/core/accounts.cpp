module;

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

module jsonl.writer;

import :accounts;

namespace jsonl::detail {

std::uint64_t Accounts::count_drop(DropReason reason, std::size_t records) noexcept {
  dropped_[index_of(reason)].fetch_add(records, std::memory_order_relaxed);
  if (!drop_reasons[index_of(reason)].in_reference_counter) return dropped_records();
  return dropped_records_.fetch_add(records, std::memory_order_relaxed) + records;
}

void Accounts::queue_full() noexcept {
  const std::uint64_t dropped = count_drop(DropReason::queue_full, 1);
  if (at_log_point(dropped)) {
    log(LogLevel::warning, "Dropped " + std::to_string(dropped) + " " + subject_ + " records");
  }
}

void Accounts::malformed(std::string_view error) noexcept {
  const std::uint64_t dropped = count_drop(DropReason::malformed, 1);
  if (at_log_point(dropped)) {
    log(LogLevel::warning, "Dropped malformed " + subject_ + " record: " + std::string(error));
  }
}

void Accounts::unexpected(Stage stage, std::size_t records, std::string_view description) noexcept {
  const bool writing = stage == Stage::writing;
  count_drop(writing ? DropReason::unexpected_write : DropReason::serialize_error, records);
  const std::uint64_t events = unexpected_events_[writing ? 1 : 0].fetch_add(1, std::memory_order_relaxed) + 1;
  if (at_log_point(events)) {
    const std::string doing = writing ? "writing " + subject_ + " JSONL" : "serializing " + subject_ + " record";
    log(LogLevel::error, "Unexpected error " + doing + " (" + std::to_string(events) + " so far): " +
                             std::string(description));
  }
}

void Accounts::sanitized() noexcept {
  const std::uint64_t sanitized = counts_[index_of(Counter::sanitized)].fetch_add(1, std::memory_order_relaxed) + 1;
  if (at_log_point(sanitized)) {
    log(LogLevel::warning,
        "Sanitized " + std::to_string(sanitized) + " " + subject_ + " records carrying unencodable text");
  }
}

void Accounts::written(std::size_t records, std::size_t lines, std::size_t bytes,
                       std::size_t content_bytes) noexcept {
  add(Counter::written, records);
  add(Counter::lines_written, lines);
  add(Counter::bytes_written, bytes);
  add(Counter::uncompressed_bytes_written, content_bytes);
  add(Counter::appends);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  last_append_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), std::memory_order_relaxed);
}

void Accounts::fill(WriterStats& stats) const noexcept {
  for (const CounterInfo& row : counters) {
    if (!row.kept_by_admission) stats[row.counter] = count(row.counter);
  }
  for (std::size_t i = 0; i < dropped_.size(); ++i) stats.dropped_by[i] = dropped_[i].load(std::memory_order_relaxed);
  if (const std::int64_t ns = last_append_ns_.load(std::memory_order_relaxed); ns != 0) {
    stats.last_append = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns)));
  }
}

void Accounts::log(LogLevel level, std::string_view message) const noexcept {
  try {
    if (sink_) sink_(level, message);
  } catch (...) {
    // A failing sink must not take the writer down with it.
  }
}

}  // namespace jsonl::detail
