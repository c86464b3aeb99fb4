// The writer's own file: its name, and rotation to a new one by size or age with
// retention of the newest few. Not part of the public contract; exported only because
// JsonlRecordWriter's template code uses it.
module;

#include <chrono>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

export module jsonl.writer:output_file;

import :options;

export namespace jsonl::detail {

class OutputFile {
 public:
  explicit OutputFile(const WriterOptions& options);

  // Names the first file, in the output directory (which the caller has created).
  // Counts it as started. Once only, before any other call.
  std::filesystem::path start();

  // Write worker. The file an append of `bytes` bytes to the writer's file goes to:
  // the current one, or a new one started first when rotation says so (the current
  // file holds data and the append would take it past the size limit, or the file has
  // been current for the age limit). Starting one beyond the retention limit deletes
  // the oldest of this writer's files: `deletions` receives each file deleted, and each
  // deletion that failed (path and error), a file already gone aside.
  struct Deletions {
    std::vector<std::filesystem::path> deleted;
    std::vector<std::string> failed;
  };
  std::filesystem::path file_for(std::size_t bytes, Deletions& deletions);

  // Write worker, after an append to the current file: its size once the append landed
  // (0 when the appender does not know; the file then grows by `bytes`).
  void appended(std::uint64_t file_size, std::uint64_t bytes) noexcept;

  // The current file; empty before start(). Thread-safe.
  std::optional<std::filesystem::path> current() const;
  // Lock-free.
  std::uint64_t files_started() const noexcept { return files_started_.load(std::memory_order_relaxed); }

 private:
  std::filesystem::path name_file(std::chrono::system_clock::time_point now);

  const WriterOptions& options_;
  const std::string prefix_;  // "<stem>-<host>-<pid>-"

  // Write worker only, after start().
  std::uint64_t size_ = 0;
  std::chrono::system_clock::time_point started_at_;
  std::deque<std::filesystem::path> kept_;  // this writer's files, oldest first
  std::set<std::filesystem::path> named_;   // every name it has given a file, deleted ones too

  mutable std::mutex mutex_;  // guards current_, for readers on other threads
  std::optional<std::filesystem::path> current_;
  std::atomic<std::uint64_t> files_started_{0};
};

}  // namespace jsonl::detail
