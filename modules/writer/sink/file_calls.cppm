// The system calls behind durable appends and publications.
module;

#include <filesystem>
#include <string_view>
#include <sys/types.h>

export module jsonl.writer:file_calls;

export namespace jsonl {

// One virtual per system call a durable append or a publication makes, each with the
// POSIX contract of the call it stands for (a result of -1 sets errno). The defaults make
// the real call; a test substitutes one to land a prefix and fail, to fail an fsync, or
// to block one. `file` names what `fd` refers to. Called on the write worker, and on the
// thread calling close() for the last publication; must be thread-safe.
class FileCalls {
 public:
  virtual ~FileCalls() = default;
  virtual ssize_t write(int fd, std::string_view bytes, const std::filesystem::path& file) const;
  virtual int fsync(int fd, const std::filesystem::path& file) const;
  virtual int rename(const std::filesystem::path& from, const std::filesystem::path& to) const;
};

}  // namespace jsonl
