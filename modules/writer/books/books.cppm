// A durable writer's books: per file, the byte range its durable appends hold and what
// its failed appends left behind, and the publication of the document that states them
// beside the files. A module implementation partition: nothing of it is exported.
module;

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

module jsonl.writer:books;

import :options;
import :stats;
import :accounts;
import :sink;

namespace jsonl::detail {

// Not thread-safe: the write side calls it under one mutex, so that a document's counts
// and file books agree. Publications and their failures are counted in the accounts.
class WriterBooks {
 public:
  // `options` and `accounts` must outlive the books; the output directory or the books
  // directory is set.
  WriterBooks(const WriterOptions& options, Accounts& accounts);

  // "<pid>-<ns since the epoch>-<8 random hex digits>": unique across restarts of a pid.
  const std::string& generation() const noexcept { return generation_; }
  // "<output_dir>/_writer/<generation>.json", or "<books_dir>/<generation>.json"
  const std::filesystem::path& document_file() const noexcept { return document_file_; }

  // Write worker: one outcome of a commit, into its file's books.
  void book(const AppendOutcome& outcome);
  // Write worker: rotation's retention lets `file` go. Its books leave the shards for
  // the retention summary, its records leave "persisted" for the reason "retention", and
  // documents name it under "deleting" until removed(): a document lists the files on
  // disk, and stays that size however long the writer rotates. The file is to be deleted
  // only once deletions_published().
  void deleted(const std::filesystem::path& file);
  // Whether the last publication that landed names every file deleted() was told of.
  bool deletions_published() const noexcept { return deletions_published_ == deletions_; }
  // The files deleted() named are gone (or their deletion failed, and was logged): later
  // documents no longer name them.
  void removed() { deleting_.clear(); }

  // Publishes the document for `counts` (the books' view of the counters: `submitted`
  // counts only records the writer accepted or refused for a full queue, and is read
  // last, so that the document balances) when it is due: always when `closed`; otherwise
  // when the books changed since the last publication that landed, and `urgent` or the
  // publish interval has passed since the last attempt. Once a closed document is
  // published, nothing more is. A failure is counted, logged by the caller from `error`,
  // and leaves the previous document whole. Returns false only for a failed attempt.
  bool publish_if_due(const WriterStats& counts, bool urgent, bool closed, std::string& error);

 private:
  struct Extent {
    std::uint64_t start = 0;
    std::uint64_t landed = 0;
    std::uint64_t records = 0;
  };
  struct FileBooks {
    std::string file;  // relative to the output directory
    std::uint64_t start_offset = 0;
    std::uint64_t persisted_end = 0;
    std::uint64_t persisted_records = 0;
    std::uint64_t fragments_isolated = 0;
    std::vector<Extent> unknown_extents;
  };
  // What the files retention let go held.
  struct Retired {
    std::uint64_t files = 0;
    std::uint64_t records = 0;
    std::uint64_t bytes = 0;
  };
  FileBooks* find(const std::filesystem::path& file);
  // What must change for a document to be worth publishing again.
  struct Key {
    std::uint64_t submitted, persisted, dropped, unknown, failed_publications, deletions;
    bool operator==(const Key&) const = default;
  };

  std::string document(const WriterStats& counts, bool closed) const;
  void write_document(const std::string& document) const;

  const WriterOptions& options_;
  Accounts& accounts_;
  const std::string generation_;
  const std::filesystem::path document_file_;
  const std::chrono::system_clock::time_point started_at_;

  // Everything below is guarded by the write side's books mutex.
  std::vector<FileBooks> files_;  // the files on disk
  std::vector<std::string> deleting_;  // let go, and perhaps not yet deleted
  Retired retired_;
  std::uint64_t failed_appends_ = 0;
  std::optional<std::string> last_error_;
  std::uint64_t attempts_ = 0;  // documents tried: the sequence number of the last
  std::chrono::steady_clock::time_point last_attempt_{};
  std::optional<Key> published_;
  std::uint64_t deletions_ = 0;            // files let go
  std::uint64_t deletions_published_ = 0;  // of those, in the last publication that landed
  bool closed_ = false;
};

}  // namespace jsonl::detail
