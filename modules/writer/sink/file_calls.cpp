module;

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string_view>
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

}  // namespace jsonl
