// The engine's durable accounting: booking commits, and publishing the books.
module;

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

module jsonl.writer;

import :engine;

namespace jsonl::detail {

std::optional<std::filesystem::path> WriterEngine::books_file() const {
  if (!books_) return std::nullopt;
  return books_->document_file();
}

bool WriterEngine::book_commit(const std::vector<CommitOutcome>& outcomes) {
  bool failed = false;
  for (const CommitOutcome& outcome : outcomes) {
    books_->book(outcome);
    if (outcome.persisted()) {
      const std::size_t isolation = outcome.fragment_isolated ? 1 : 0;
      const AppendResult result{.bytes = outcome.bytes + isolation,
                                .lines = outcome.records + isolation,
                                .file_size = *outcome.payload_offset + outcome.bytes,
                                .recreated_directory = outcome.recreated_directory};
      count_written(outcome.file, outcome.records, result);
      continue;
    }
    failed = true;
    if (outcome.recreated_directory) directories_recreated_.fetch_add(1, std::memory_order_relaxed);
    unknown_.fetch_add(outcome.touched, std::memory_order_relaxed);
    lost_in_run_ += outcome.touched;
    const std::size_t never_written = outcome.records - outcome.touched;
    if (outcome.unexpected) {
      count_unexpected_write(never_written, *outcome.error);
    } else {
      count_write_error(never_written, *outcome.error);
    }
  }
  for (const std::filesystem::path& file : deleted_files_) books_->deleted(file);
  deleted_files_.clear();
  return failed;
}

void WriterEngine::count_unknown(std::size_t records) noexcept {
  unknown_.fetch_add(records, std::memory_order_relaxed);
}

BookCounts WriterEngine::book_counts() const noexcept {
  const auto load = [](const std::atomic<std::uint64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  };
  BookCounts counts;
  counts.persisted = load(written_);
  counts.unknown = load(unknown_);
  counts.queue_full = load(queue_full_);
  counts.malformed = load(malformed_);
  counts.serialize_error = load(serialize_errors_.records);
  counts.write_error = load(write_errors_);
  counts.unexpected_write = load(unexpected_writes_.records);
  counts.abandoned = load(abandoned_);
  counts.sanitized = load(sanitized_);
  // Last: every record classified above was accepted, or refused for a full queue,
  // before it was classified.
  counts.submitted = counts.queue_full + accepted();
  return counts;
}

void WriterEngine::publish_books(bool urgent) {
  std::string error;
  {
    const std::lock_guard lock(books_mutex_);
    if (books_->publish_if_due(book_counts(), urgent, false, error)) return;
  }
  if (at_log_point(books_->publication_errors())) {
    log(LogLevel::warning, "Failed to publish " + options_.subject + " JSONL books: " + error);
  }
}

void WriterEngine::publish_closed_books(std::chrono::milliseconds timeout) {
  auto published = std::make_shared<std::promise<std::string>>();
  std::future<std::string> outcome = published->get_future();
  // The thread holds the engine: a publication that outlives close touches nothing freed.
  std::thread publisher([engine = shared_from_this(), published] {
    std::string error;
    const std::lock_guard lock(engine->books_mutex_);
    engine->books_->publish_if_due(engine->book_counts(), true, true, error);
    published->set_value(std::move(error));
  });
  if (outcome.wait_for(timeout) != std::future_status::ready) {
    publisher.detach();
    log(LogLevel::warning, "Timed out publishing the closed " + options_.subject + " JSONL books");
    return;
  }
  publisher.join();
  if (const std::string error = outcome.get(); !error.empty()) {
    log(LogLevel::warning, "Failed to publish " + options_.subject + " JSONL books: " + error);
  }
}

}  // namespace jsonl::detail
