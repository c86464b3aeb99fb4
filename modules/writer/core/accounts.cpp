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

std::uint64_t Accounts::add(DropReason reason, std::size_t records) noexcept {
  dropped_[index_of(reason)].fetch_add(records, std::memory_order_relaxed);
  if (!drop_reasons[index_of(reason)].in_reference_counter) return dropped_records();
  return dropped_records_.fetch_add(records, std::memory_order_relaxed) + records;
}

void Accounts::queue_full() noexcept {
  const std::uint64_t dropped = add(DropReason::queue_full, 1);
  if (at_log_point(dropped)) {
    log(LogLevel::warning, "Dropped " + std::to_string(dropped) + " " + subject_ + " records");
  }
}

void Accounts::malformed(std::string_view error) noexcept {
  const std::uint64_t dropped = add(DropReason::malformed, 1);
  if (at_log_point(dropped)) {
    log(LogLevel::warning, "Dropped malformed " + subject_ + " record: " + std::string(error));
  }
}

void Accounts::unexpected(Stage stage, std::size_t records, std::string_view description) noexcept {
  const bool writing = stage == Stage::writing;
  add(writing ? DropReason::unexpected_write : DropReason::serialize_error, records);
  const std::uint64_t events = unexpected_events_[writing ? 1 : 0].fetch_add(1, std::memory_order_relaxed) + 1;
  if (at_log_point(events)) {
    const std::string doing = writing ? "writing " + subject_ + " JSONL" : "serializing " + subject_ + " record";
    log(LogLevel::error, "Unexpected error " + doing + " (" + std::to_string(events) + " so far): " +
                             std::string(description));
  }
}

void Accounts::sanitized() noexcept {
  const std::uint64_t sanitized = sanitized_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (at_log_point(sanitized)) {
    log(LogLevel::warning,
        "Sanitized " + std::to_string(sanitized) + " " + subject_ + " records carrying unencodable text");
  }
}

void Accounts::written(std::size_t records, std::size_t lines, std::size_t bytes,
                       std::size_t content_bytes) noexcept {
  written_.fetch_add(records, std::memory_order_relaxed);
  lines_.fetch_add(lines, std::memory_order_relaxed);
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
  content_bytes_.fetch_add(content_bytes, std::memory_order_relaxed);
  appends_.fetch_add(1, std::memory_order_relaxed);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  last_append_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), std::memory_order_relaxed);
}

void Accounts::serialized(std::size_t records, bool side_by_side) noexcept {
  (side_by_side ? serialized_side_by_side_ : serialized_alone_).fetch_add(records, std::memory_order_relaxed);
}

void Accounts::fill(WriterStats& stats) const noexcept {
  const auto load = [](const auto& counter) { return counter.load(std::memory_order_relaxed); };
  stats.written = load(written_);
  stats.unknown = load(unknown_);
  for (std::size_t i = 0; i < dropped_.size(); ++i) stats.dropped_by[i] = load(dropped_[i]);
  stats.sanitized = load(sanitized_);
  stats.lines_written = load(lines_);
  stats.bytes_written = load(bytes_);
  stats.uncompressed_bytes_written = load(content_bytes_);
  stats.appends = load(appends_);
  stats.serialized_side_by_side = load(serialized_side_by_side_);
  stats.serialized_alone = load(serialized_alone_);
  stats.directories_recreated = load(directories_recreated_);
  if (const std::int64_t ns = load(last_append_ns_); ns != 0) {
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
