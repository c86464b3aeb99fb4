module;

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <sys/types.h>
#include <unistd.h>

module jsonl.writer;

namespace jsonl {

int FileCalls::open(const std::filesystem::path& file, int flags, mode_t mode) const {
  return ::open(file.c_str(), flags, mode);
}

ssize_t FileCalls::write(int fd, std::string_view bytes, const std::filesystem::path&) const {
  return ::write(fd, bytes.data(), bytes.size());
}

int FileCalls::ftruncate(int fd, off_t size, const std::filesystem::path&) const { return ::ftruncate(fd, size); }

int FileCalls::fsync(int fd, const std::filesystem::path&) const { return ::fsync(fd); }

int FileCalls::rename(const std::filesystem::path& from, const std::filesystem::path& to) const {
  return std::rename(from.c_str(), to.c_str());
}

int FileCalls::mkdir(const std::filesystem::path& directory, mode_t mode) const {
  return ::mkdir(directory.c_str(), mode);
}

int FileCalls::unlink(const std::filesystem::path& file) const { return ::unlink(file.c_str()); }

bool FileCalls::make_directories(const std::filesystem::path& directory) const {
  std::error_code error;
  if (directory.empty() || std::filesystem::is_directory(directory, error)) return false;
  const bool parents = make_directories(directory.parent_path());
  if (mkdir(directory, 0755) == 0) return true;
  if (errno == EEXIST && std::filesystem::is_directory(directory, error)) return parents;
  throw std::system_error(errno, std::generic_category(), "create directory " + directory.string());
}

}  // namespace jsonl
