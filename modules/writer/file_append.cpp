module;

#include <cerrno>
#include <cstddef>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

module jsonl.writer;

namespace jsonl {
namespace {

[[noreturn]] void throw_errno(const char* what, const std::filesystem::path& file) {
  throw std::system_error(errno, std::generic_category(), std::string(what) + " " + file.string());
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() { ::close(fd_); }
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

void write_all(int fd, std::string_view bytes, const std::filesystem::path& file) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      throw_errno("write", file);
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
}

bool ends_without_newline(int fd, const std::filesystem::path& file) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) throw_errno("fstat", file);
  if (status.st_size == 0) return false;
  char last = '\n';
  if (::pread(fd, &last, 1, status.st_size - 1) != 1) throw_errno("pread", file);
  return last != '\n';
}

}  // namespace

AppendResult append_to_file(const std::filesystem::path& file, std::string_view bytes,
                            std::size_t lines) {
  int fd;
  do {
    fd = ::open(file.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_errno("open", file);
  const FileDescriptor descriptor(fd);
  AppendResult result;
  if (ends_without_newline(fd, file)) {
    write_all(fd, "\n", file);
    result.bytes += 1;
    result.lines += 1;
  }
  write_all(fd, bytes, file);
  result.bytes += bytes.size();
  result.lines += lines;
  return result;
}

}  // namespace jsonl
