module;

#include <cerrno>
#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

module jsonl.writer;

import :publication;

namespace jsonl::detail {

void remove_expired(const WriterState& writer, const std::filesystem::path& file) {
  if (writer.options.durability.calls->unlink(file) != 0 && errno != ENOENT) {
    writer.accounts.log(LogLevel::warning, "Could not delete old " + writer.accounts.subject() + " JSONL file " +
                                               file.string() + ": " + std::generic_category().message(errno));
    return;
  }
  // A routed file's own directory below the output directory (a request trace's hour)
  // goes with its last file; one that holds anything else stays.
  const std::filesystem::path directory = file.parent_path();
  const std::filesystem::path below = directory.lexically_relative(*writer.options.output_dir);
  if (below.empty() || below == "." || *below.begin() == "..") return;
  std::error_code not_empty;
  std::filesystem::remove(directory, not_empty);
}

Publication::Publication(std::shared_ptr<WriterState> writer)
    : writer_(std::move(writer)), books_(writer_->options, writer_->accounts) {}

bool Publication::book(std::span<const AppendOutcome> outcomes, std::vector<std::filesystem::path>& expired) {
  bool failed = false;
  for (const AppendOutcome& outcome : outcomes) {
    books_.book(outcome);
    failed = failed || !outcome.succeeded();
  }
  for (std::filesystem::path& file : expired) {
    books_.deleted(file);
    booked_deleted_.push_back(std::move(file));
  }
  expired.clear();
  // Urgent when files wait to be deleted: they go only once the books say so.
  return failed || !booked_deleted_.empty();
}

void Publication::publish(bool urgent) {
  std::string error;
  {
    const std::lock_guard lock(mutex_);
    const bool landed = books_.publish_if_due(writer_->books_view(), urgent, false, error);
    remove_booked_deleted();
    if (landed) return;
  }
  Accounts& accounts = writer_->accounts;
  if (at_log_point(accounts.count(Counter::publication_errors))) {
    accounts.log(LogLevel::warning, "Failed to publish " + accounts.subject() + " JSONL books: " + error);
  }
}

std::string Publication::publish_closed() {
  std::string error;
  const std::lock_guard lock(mutex_);
  books_.publish_if_due(writer_->books_view(), true, true, error);
  remove_booked_deleted();
  return error;
}

void Publication::remove_booked_deleted() {
  if (!books_.deletions_published()) return;
  for (const std::filesystem::path& file : booked_deleted_) remove_expired(*writer_, file);
  booked_deleted_.clear();
  books_.removed();
}

}  // namespace jsonl::detail
