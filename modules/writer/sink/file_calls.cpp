module;

#include <cstdio>
#include <filesystem>
#include <string_view>
#include <sys/types.h>
#include <unistd.h>

module jsonl.writer;

namespace jsonl {

ssize_t FileCalls::write(int fd, std::string_view bytes, const std::filesystem::path&) const {
  return ::write(fd, bytes.data(), bytes.size());
}

int FileCalls::fsync(int fd, const std::filesystem::path&) const { return ::fsync(fd); }

int FileCalls::rename(const std::filesystem::path& from, const std::filesystem::path& to) const {
  return std::rename(from.c_str(), to.c_str());
}

}  // namespace jsonl
