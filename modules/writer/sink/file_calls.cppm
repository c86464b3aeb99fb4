// The system calls that change what is on disk: every one a writer makes goes through
// here, so that a test can fail or block any of them, and record them all.
module;

#include <filesystem>
#include <string_view>
#include <sys/types.h>

export module jsonl.writer:file_calls;

export namespace jsonl {

// One virtual per system call that changes the disk (opening a file that may be created
// or truncated, writing, cutting a file short, fsync, rename, mkdir, unlink), each with
// the POSIX contract of the call it stands for (a result of -1 sets errno). The defaults
// make the real call; a test substitutes one to land a prefix and fail, to fail an fsync,
// to block one, or to record every call and what it changed. `file` names what `fd`
// refers to. Called on the write worker, on the thread calling start() or close(), and by
// a request trace's groups; must be thread-safe.
class FileCalls {
 public:
  virtual ~FileCalls() = default;
  virtual int open(const std::filesystem::path& file, int flags, mode_t mode) const;
  virtual ssize_t write(int fd, std::string_view bytes, const std::filesystem::path& file) const;
  virtual int ftruncate(int fd, off_t size, const std::filesystem::path& file) const;
  virtual int fsync(int fd, const std::filesystem::path& file) const;
  virtual int rename(const std::filesystem::path& from, const std::filesystem::path& to) const;
  virtual int mkdir(const std::filesystem::path& directory, mode_t mode) const;
  virtual int unlink(const std::filesystem::path& file) const;

  // Creates `directory` and every missing parent with mkdir above, outermost first, as
  // std::filesystem::create_directories would. Returns whether it created any; throws
  // std::system_error ("create directory <path>") when one cannot be created or a part
  // is not a directory.
  bool make_directories(const std::filesystem::path& directory) const;
};

}  // namespace jsonl
