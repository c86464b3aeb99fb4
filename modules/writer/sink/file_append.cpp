module;

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

module jsonl.writer;

import :durable_commit;
import :posix_file;

namespace jsonl {
namespace {

using detail::errno_message;
using detail::FileDescriptor;
using detail::throw_errno;

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

// Opens `file` for appending, creating its directory again (with its parents) and
// retrying once when the directory is gone. Throws std::system_error.
int open_recreating_directory(const std::filesystem::path& file, bool& recreated_directory) {
  int fd = open_for_append(file);
  if (fd < 0 && errno == ENOENT && file.has_parent_path()) {
    std::error_code error;
    recreated_directory = std::filesystem::create_directories(file.parent_path(), error);
    if (error) throw std::system_error(error, "create directory " + file.parent_path().string());
    fd = open_for_append(file);
  }
  if (fd < 0) throw_errno("open", file);
  return fd;
}

}  // namespace

AppendResult append_to_file(const std::filesystem::path& file, std::string_view bytes,
                            std::size_t lines) {
  AppendResult result;
  const FileDescriptor descriptor(open_recreating_directory(file, result.recreated_directory));
  const int fd = descriptor.get();
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

namespace detail {

DurableCommit::~DurableCommit() {
  for (const OpenFile& file : files_) ::close(file.fd);
}

DurableCommit::OpenFile& DurableCommit::open(const std::filesystem::path& file, CommitOutcome& outcome) {
  for (OpenFile& open : files_) {
    if (open.path == file) return open;
  }
  const int fd = open_recreating_directory(file, outcome.recreated_directory);
  return files_.emplace_back(OpenFile{.path = file, .fd = fd, .recreated_directory = outcome.recreated_directory});
}

CommitOutcome& DurableCommit::refuse(const FileAppend& append, std::string error) {
  CommitOutcome& outcome = outcomes_.emplace_back();
  outcome.file = append.file;
  outcome.records = append.records;
  outcome.bytes = append.bytes.size();
  outcome.error = std::move(error);
  return outcome;
}

CommitOutcome& DurableCommit::write(const FileAppend& append) {
  CommitOutcome& outcome = outcomes_.emplace_back();
  outcome.file = append.file;
  outcome.records = append.records;
  outcome.bytes = append.bytes.size();
  OpenFile* file = nullptr;
  try {
    file = &open(append.file, outcome);
    const std::uint64_t size = file_size(file->fd, append.file);
    outcome.size_before = size;
    if (ends_without_newline(file->fd, size, append.file)) {
      if (calls_.write(file->fd, "\n", append.file) != 1) throw_errno("write", append.file);
      outcome.fragment_isolated = true;
    }
  } catch (const std::system_error& error) {
    outcome.error = error.what();
    return outcome;
  }
  if (!file->written) file->maybe_new = *outcome.size_before == 0;
  file->written = true;
  const std::uint64_t start = *outcome.size_before + (outcome.fragment_isolated ? 1 : 0);
  outcome.payload_offset = start;
  for (std::string_view rest = append.bytes; !rest.empty();) {
    const ssize_t written = calls_.write(file->fd, rest, append.file);
    if (written > 0) {
      rest.remove_prefix(static_cast<std::size_t>(written));
      continue;
    }
    if (written < 0 && errno == EINTR) continue;
    if (written == 0) errno = EIO;
    outcome.error = errno_message("write", append.file);
    // What landed is measured, not inferred from the calls: a failed write may still
    // have put bytes in the file.
    struct stat status {};
    if (::fstat(file->fd, &status) == 0) {
      const auto end = static_cast<std::uint64_t>(status.st_size);
      const std::uint64_t landed = std::min<std::uint64_t>(end > start ? end - start : 0, append.bytes.size());
      const std::string_view reached(append.bytes.data(), landed);
      outcome.landed = landed;
      outcome.touched = static_cast<std::size_t>(std::count(reached.begin(), reached.end(), '\n')) +
                        (landed != 0 && reached.back() != '\n' ? 1 : 0);
    } else {
      outcome.touched = append.records;
    }
    break;
  }
  return outcome;
}

bool DurableCommit::sync_name(const OpenFile& file, std::string& error) const {
  const auto sync_directory = [&](const std::filesystem::path& directory) {
    const FileDescriptor fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() >= 0 && calls_.fsync(fd.get(), directory) == 0) return true;
    error = errno_message(fd.get() < 0 ? "open" : "fsync", directory);
    return false;
  };
  const std::filesystem::path directory = file.path.parent_path();
  return sync_directory(directory) && (!file.recreated_directory || sync_directory(directory.parent_path()));
}

void DurableCommit::sync() {
  for (const OpenFile& file : files_) {
    if (!file.written) continue;
    std::string error;
    if (calls_.fsync(file.fd, file.path) != 0) {
      error = errno_message("fsync", file.path);
    } else if (!file.maybe_new && durable_names_.contains(file.path)) {
      continue;
    } else if (sync_name(file, error)) {
      durable_names_.insert(file.path);
      continue;
    }
    for (CommitOutcome& outcome : outcomes_) {
      if (outcome.file != file.path || !outcome.payload_offset || outcome.error) continue;
      outcome.error = error;
      outcome.landed = outcome.bytes;
      outcome.touched = outcome.records;
    }
  }
}

}  // namespace detail
}  // namespace jsonl
