module;

#include <cerrno>
#include <cstddef>
#include <cstdint>
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

std::uint64_t file_size(int fd, const std::filesystem::path& file) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) throw_errno("fstat", file);
  return static_cast<std::uint64_t>(status.st_size);
}

bool ends_without_newline(int fd, std::uint64_t size, const std::filesystem::path& file) {
  if (size == 0) return false;
  char last = '\n';
  if (::pread(fd, &last, 1, static_cast<off_t>(size - 1)) != 1) throw_errno("pread", file);
  return last != '\n';
}

int open_for_append(const std::filesystem::path& file) {
  int fd;
  do {
    fd = ::open(file.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

}  // namespace

AppendResult append_to_file(const std::filesystem::path& file, std::string_view bytes,
                            std::size_t lines) {
  AppendResult result;
  int fd = open_for_append(file);
  if (fd < 0 && errno == ENOENT && file.has_parent_path()) {
    std::error_code error;
    result.recreated_directory = std::filesystem::create_directories(file.parent_path(), error);
    if (error) throw std::system_error(error, "create directory " + file.parent_path().string());
    fd = open_for_append(file);
  }
  if (fd < 0) throw_errno("open", file);
  const FileDescriptor descriptor(fd);
  const std::uint64_t size = file_size(fd, file);
  if (ends_without_newline(fd, size, file)) {
    write_all(fd, "\n", file);
    result.bytes += 1;
    result.lines += 1;
  }
  write_all(fd, bytes, file);
  result.bytes += bytes.size();
  result.lines += lines;
  result.file_size = size + result.bytes;
  return result;
}

}  // namespace jsonl
