// The writer's own file: its name, and rotation to a new one by size or age with
// retention of the newest few, as a decorator of the sink that writes it. A module
// implementation partition: nothing of it is exported.
module;

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

module jsonl.writer:rotating_sink;

import :options;
import :sink;
import :accounts;

namespace jsonl::detail {

// Appends to the writer's own file (an append whose route names no file) go to the file
// current when they are written: before one that would take the current file past the
// size limit (a file that already holds data; compressed, once the file reaches it, as
// what an append adds is known only once it is compressed), or once the file has been current for
// the age limit, a new one is started. Starting one beyond the retention limit deletes
// the oldest of this writer's files. An append is never split between files. The file
// after an append that left it torn (AppendOutcome::torn) is a new one too, as is the
// file after a rotation request (WriterOptions::rotation_requests) unless it is empty.
// Appends to routed files pass through, but for their retention
// (WriterOptions::max_routed_file_idle): a routed file idle that long is let go as the
// oldest own file is, looked for at most once a second, and an append routed to a file
// let go is refused. Everything goes to `inner`. Each file started is counted in
// `accounts`.
class RotatingSink final : public Sink {
 public:
  RotatingSink(const WriterOptions& options, Sink& inner, Accounts& accounts);

  // Names the first file, in the output directory (which the caller has created).
  // Counts it as started. Once only, before any other call.
  std::filesystem::path start();

  // Names the file in `outcome`: for an append to the writer's file (append.file
  // empty), the current file.
  void append(const FileAppend& append, AppendOutcome& outcome) override;
  void make_durable(std::span<AppendOutcome> outcomes) override { inner_.make_durable(outcomes); }
  void end_commit() noexcept override { inner_.end_commit(); }

  // The files retention let go since the last call, in the order it let them go.
  // Deleting them is the write worker's: at once, or with durability only once books
  // that mark them deleted have landed, so that no surviving document claims a file
  // that is gone.
  std::vector<std::filesystem::path> take_expired() { return std::exchange(expired_, {}); }

  // The current file; empty before start(). Thread-safe.
  std::optional<std::filesystem::path> current() const;

 private:
  std::filesystem::path name_file(std::chrono::system_clock::time_point now);
  // The file an append of `bytes` bytes to the writer's file goes to, rotating first
  // when the limits say so. The name is the one kept, valid until the next call.
  const std::filesystem::path& file_for(std::size_t bytes);
  // Whether rotation was asked for (WriterOptions::rotation_requests) since the last call.
  bool take_requests();
  // Notes an append to the routed `file` at `now` and lets go the routed files idle for
  // the retention limit; throws std::system_error for a file already let go.
  void routed_to(const std::filesystem::path& file, std::chrono::system_clock::time_point now);

  const WriterOptions& options_;
  Sink& inner_;
  Accounts& accounts_;
  const std::string prefix_;  // "<stem>-<host>-<pid>-"

  // Write worker only, after start().
  std::uint64_t size_ = 0;
  bool torn_ = false;  // the current file ends in part of a frame
  std::chrono::system_clock::time_point started_at_;
  std::deque<std::filesystem::path> kept_;  // this writer's files, oldest first
  std::set<std::filesystem::path> named_;   // every name it has given a file, deleted ones too
  std::vector<std::filesystem::path> expired_;
  std::uint64_t requests_seen_ = 0;  // RotationRequests::made() when last looked at
  // With routed files' retention: when each was last appended to, the names let go, and
  // when to look for idle ones next.
  std::map<std::filesystem::path, std::chrono::system_clock::time_point> routed_;
  std::set<std::filesystem::path> routed_let_go_;
  std::chrono::system_clock::time_point next_idle_check_{};

  mutable std::mutex mutex_;  // guards current_, for readers on other threads
  std::optional<std::filesystem::path> current_;
};

}  // namespace jsonl::detail
