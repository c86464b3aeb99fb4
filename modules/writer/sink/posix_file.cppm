// What the implementation units that make system calls share: an owned file descriptor,
// errno's messages, the one write-with-retry loop, and the host's name. A module
// implementation partition: nothing of it is exported.
module;

#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <system_error>
#include <unistd.h>
#include <utility>

module jsonl.writer:posix_file;

import :file_calls;

namespace jsonl::detail {

// "<what> <path>: <errno's message>"
inline std::string errno_message(const char* what, const std::filesystem::path& path) {
  return std::string(what) + " " + path.string() + ": " + std::generic_category().message(errno);
}

// Throws std::system_error for errno, described as "<what> <path>".
[[noreturn]] inline void throw_errno(const char* what, const std::filesystem::path& path) {
  throw std::system_error(errno, std::generic_category(), std::string(what) + " " + path.string());
}

// A file descriptor, closed with its owner. Holds -1 when a call that made it failed
// (errno then says why).
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  // open(2) of `path` with `flags` and O_CLOEXEC, for reading; throws std::system_error
  // on failure.
  FileDescriptor(const std::filesystem::path& path, int flags) : fd_(::open(path.c_str(), flags | O_CLOEXEC)) {
    if (fd_ < 0) throw_errno("open", path);
  }
  // The same through `calls`, for an open that may create or truncate, retried after
  // EINTR.
  FileDescriptor(const FileCalls& calls, const std::filesystem::path& path, int flags, mode_t mode = 0644) {
    do {
      fd_ = calls.open(path, flags | O_CLOEXEC, mode);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) throw_errno("open", path);
  }
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    if (this != &other) {
      close();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~FileDescriptor() { close(); }
  int get() const noexcept { return fd_; }
  bool is_open() const noexcept { return fd_ >= 0; }
  void close() noexcept {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }

 private:
  int fd_;
};

// Writes all of `bytes` to `fd` through `calls`, continued after a partial write and
// after EINTR. Returns how many bytes were written: all of them, or fewer when a write
// failed (errno says why; EIO for a write that wrote nothing and reported no error).
inline std::size_t write_fully(const FileCalls& calls, int fd, std::string_view bytes,
                               const std::filesystem::path& file) noexcept {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t written = calls.write(fd, bytes.substr(done), file);
    if (written > 0) {
      done += static_cast<std::size_t>(written);
    } else if (written < 0 && errno == EINTR) {
      continue;
    } else {
      if (written == 0) errno = EIO;
      break;
    }
  }
  return done;
}

inline std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace jsonl::detail
