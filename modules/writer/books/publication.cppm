// A durable writer's books and their publication, beside the write worker's commit
// policy: the worker books each commit here; the worker (after a commit, and when idle),
// flush and close publish. A file retention lets go is deleted only once a published
// document names it under "deleting" (and no longer claims it). An implementation
// partition: nothing of it is exported.
module;

#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

module jsonl.writer:publication;

import :log;
import :accounts;
import :writer_state;
import :sink;
import :books;

namespace jsonl::detail {

// Deletes a file retention let go, and its directory when that is below the output
// directory and holds nothing more; a file already gone is no failure, any other is
// logged (WARNING).
void remove_expired(const WriterState& writer, const std::filesystem::path& file);

// Thread-safe: every member but hold() takes the books' lock. That lock is taken before
// the write side's hand-off mutex and never while holding it, so that a publication stuck
// in the filesystem never holds up close's cancellation.
class Publication {
 public:
  // `writer` must have durability enabled.
  explicit Publication(std::shared_ptr<WriterState> writer);

  // "<output_dir>/_writer/<generation>.json", or in the books directory.
  const std::filesystem::path& document_file() const noexcept { return books_.document_file(); }

  // The books' lock, held while a commit is booked (book) and counted, so that a
  // document's counts agree with its file books.
  [[nodiscard]] std::unique_lock<std::mutex> hold() { return std::unique_lock(mutex_); }

  // With hold()'s lock: books a commit's outcomes in their files' books, and marks the
  // files retention let go meanwhile (`expired`, emptied) as let go. True when the books
  // are to be published at once: an append failed, or files wait to be deleted.
  bool book(std::span<const AppendOutcome> outcomes, std::vector<std::filesystem::path>& expired);

  // Publishes when due (WriterBooks::publish_if_due), then deletes what a landed document
  // names as deleting. A failure is logged (WARNING, rate-limited by the failures' count).
  void publish(bool urgent);

  // Publishes the closed document (nothing is published after it) and deletes what it
  // names as deleting. Returns why it failed; empty when it landed.
  std::string publish_closed();

 private:
  // With the lock held, after a publication.
  void remove_booked_deleted();

  const std::shared_ptr<WriterState> writer_;
  std::mutex mutex_;
  // Guarded by mutex_.
  WriterBooks books_;
  std::vector<std::filesystem::path> booked_deleted_;  // to go once a document says so
};

}  // namespace jsonl::detail
