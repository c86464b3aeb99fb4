// A group commit: appends written to their files, then each file fsync()ed once, with
// what became of every append. Not part of the public contract; exported only because
// JsonlRecordWriter's template code uses the engine that uses it.
module;

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

export module jsonl.writer:durable_commit;

import :file_calls;
import :layout;

export namespace jsonl::detail {

// One append of a commit. Offsets are known once its file was opened and measured.
struct CommitOutcome {
  std::filesystem::path file;
  std::size_t records = 0;
  std::size_t bytes = 0;  // its lines, the isolating newline aside
  std::optional<std::uint64_t> size_before;  // the file's size before anything of it
  bool fragment_isolated = false;  // a '\n' went first: the file ended mid-line
  std::optional<std::uint64_t> payload_offset;  // where its lines began: they were attempted
  bool recreated_directory = false;
  // Failed: why, and for lines that were attempted, how many payload bytes reached the
  // file (empty when that could not be measured) and the records those bytes touch,
  // wholly or partly.
  std::optional<std::string> error;
  std::optional<std::uint64_t> landed;
  std::size_t touched = 0;
  bool unexpected = false;  // the error was not the filesystem's

  bool persisted() const noexcept { return !error; }
};

// Write worker only. Files stay open from their first append to sync(), so the fsync
// reports any error of the writes before it; closed when the commit is destroyed.
class DurableCommit {
 public:
  explicit DurableCommit(const FileCalls& calls) : calls_(calls) {}
  DurableCommit(const DurableCommit&) = delete;
  DurableCommit& operator=(const DurableCommit&) = delete;
  ~DurableCommit();

  // Writes `append` in one write (continued after a partial one), after a '\n' when its
  // file ends mid-line; never throws for a filesystem error, which the outcome holds.
  CommitOutcome& write(const FileAppend& append);
  // Counts an append that failed before any of it was written.
  CommitOutcome& refuse(const FileAppend& append, std::string error);
  // fsync()s each file written; every append written to a file whose fsync failed fails
  // with all its bytes landed.
  void sync();

  std::vector<CommitOutcome>& outcomes() noexcept { return outcomes_; }

 private:
  struct OpenFile {
    std::filesystem::path path;
    int fd = -1;
    std::uint64_t size = 0;  // as this commit's writes left it
    bool ends_mid_line = false;
    bool written = false;
  };
  OpenFile& open(const std::filesystem::path& file, CommitOutcome& outcome);

  const FileCalls& calls_;
  std::vector<OpenFile> files_;
  std::vector<CommitOutcome> outcomes_;
};

}  // namespace jsonl::detail
