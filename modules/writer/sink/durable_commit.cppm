// A group commit: appends written to their files, then each file fsync()ed once, with
// what became of every append. Not part of the public contract; exported only because
// JsonlRecordWriter's template code uses the engine that uses it.
module;

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
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
  // `durable_names`: the files whose names are known to be durable (their directory was
  // fsync()ed since the writer first wrote them); sync() adds to it. A file empty when
  // opened may have just been created (again) and is treated as new whatever the set says.
  DurableCommit(const FileCalls& calls, std::set<std::filesystem::path>& durable_names)
      : calls_(calls), durable_names_(durable_names) {}
  DurableCommit(const DurableCommit&) = delete;
  DurableCommit& operator=(const DurableCommit&) = delete;
  ~DurableCommit();

  // Writes `append` in one write (continued after a partial one), after a '\n' when its
  // file ends mid-line; never throws for a filesystem error, which the outcome holds.
  CommitOutcome& write(const FileAppend& append);
  // Counts an append that failed before any of it was written.
  CommitOutcome& refuse(const FileAppend& append, std::string error);
  // fsync()s each file written, and the directory of each not yet in `durable_names`
  // (a new file's name survives a crash only then), and that directory's parent when the
  // directory was made again; every append written to a file whose fsync, or whose
  // directory's, failed fails with all its bytes landed.
  void sync();

  std::vector<CommitOutcome>& outcomes() noexcept { return outcomes_; }

 private:
  struct OpenFile {
    std::filesystem::path path;
    int fd = -1;
    bool written = false;
    bool recreated_directory = false;
    bool maybe_new = false;  // empty before its first append of the commit
  };
  OpenFile& open(const std::filesystem::path& file, CommitOutcome& outcome);
  // fsync()s `file`'s name: its directory, and the parent too when the directory was
  // made again. On failure, names the call and the path in `error`.
  bool sync_name(const OpenFile& file, std::string& error) const;

  const FileCalls& calls_;
  std::set<std::filesystem::path>& durable_names_;
  std::vector<OpenFile> files_;
  std::vector<CommitOutcome> outcomes_;
};

}  // namespace jsonl::detail
