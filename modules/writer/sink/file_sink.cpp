module;

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <vector>

module jsonl.writer;

import :sink;
import :posix_file;

namespace jsonl {
namespace {

using detail::errno_message;
using detail::FileDescriptor;
using detail::throw_errno;

struct stat measure(int fd, const std::filesystem::path& file) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) throw_errno("fstat", file);
  return status;
}

// Whether `fd` is still the file at `file`'s name: not removed, renamed away or
// replaced (a symlink planted there is another file too).
bool still_at_its_name(const struct stat& open, const std::filesystem::path& file) {
  struct stat named {};
  if (::fstatat(AT_FDCWD, file.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0) return false;
  return named.st_dev == open.st_dev && named.st_ino == open.st_ino;
}

bool ends_without_newline(int fd, std::uint64_t size, const std::filesystem::path& file) {
  if (size == 0) return false;
  char last = '\n';
  if (::pread(fd, &last, 1, static_cast<off_t>(size - 1)) != 1) throw_errno("pread", file);
  return last != '\n';
}

FileDescriptor open_for_append(const FileCalls& calls, const std::filesystem::path& file) {
  int fd;
  do {
    fd = calls.open(file, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  } while (fd < 0 && errno == EINTR);
  return FileDescriptor(fd);
}

// Opens `file` for appending, creating its directory again (with its parents) and
// retrying once when the directory is gone. Throws std::system_error.
FileDescriptor open_recreating_directory(const FileCalls& calls, const std::filesystem::path& file,
                                         bool& recreated_directory) {
  if (FileDescriptor fd = open_for_append(calls, file); fd.get() >= 0 || errno != ENOENT || !file.has_parent_path()) {
    if (fd.get() < 0) throw_errno("open", file);
    return fd;
  }
  recreated_directory = calls.make_directories(file.parent_path());
  FileDescriptor fd = open_for_append(calls, file);
  if (fd.get() < 0) throw_errno("open", file);
  return fd;
}

}  // namespace

// The files the last commit used, held open for the next, and the names known durable
// across commits. A descriptor is kept while its file is used commit after commit, so a
// commit does not open, measure and close each file again; before each commit the name
// is looked up, and a file removed, renamed away or replaced there is opened afresh.
struct FileSink::Files {
  struct Open {
    std::filesystem::path path;
    FileDescriptor fd;
    // The size this sink left the file at, its last byte a newline or a frame's end;
    // empty after a failed append. A file found at that size again is taken as left
    // (its last byte is not read back).
    std::optional<std::uint64_t> left_at;
    bool used = false;  // by this commit
    bool recreated_directory = false;
    bool written = false;
    bool maybe_new = false;  // empty when the commit first wrote it
  };
  std::vector<Open> open;
  // Files whose names are durable: their directory was fsync()ed since this sink first
  // wrote them. A file empty when opened may have been created (again) and is treated
  // as new whatever the set says.
  std::set<std::filesystem::path> durable_names;
  // Directories whose own names are durable: their parent was fsync()ed since this sink
  // first made a file in them durable. Whoever made a directory (rotation's recreation,
  // a request trace's hour bucket), its name is made durable here before any file in it
  // counts.
  std::set<std::filesystem::path> durable_directories;
  // Files that end in part of a zstd frame this sink could not cut off: closed to frames.
  // One for each append whose cut-off failed, and never forgotten.
  std::set<std::filesystem::path> torn;

  // Bound: a writer that makes new files for ever (one an hour, a file per rotation)
  // would remember each; past `names_remembered` both sets are forgotten at once, and
  // each file in use has its name made durable again at its next commit.
  static constexpr std::size_t names_remembered = 64;
  void remember_durable(const std::filesystem::path& file) {
    if (durable_names.size() >= names_remembered) {
      durable_names.clear();
      durable_directories.clear();
    }
    durable_directories.insert(file.parent_path());
    durable_names.insert(file);
  }

  // The file's entry, open, and its size now.
  Open& find_or_open(const FileCalls& calls, const std::filesystem::path& file, AppendOutcome& outcome,
                     std::uint64_t& size) {
    auto entry = std::find_if(open.begin(), open.end(), [&](const Open& candidate) { return candidate.path == file; });
    if (entry == open.end()) entry = open.insert(open.end(), Open{file, FileDescriptor(-1)});
    struct stat status {};
    if (entry->fd.is_open()) {
      status = measure(entry->fd.get(), file);
      if (!entry->used && !still_at_its_name(status, file)) entry->fd.close();
    }
    if (!entry->fd.is_open()) {
      entry->fd = open_recreating_directory(calls, file, outcome.placement.recreated_directory);
      entry->recreated_directory = outcome.placement.recreated_directory;
      entry->left_at.reset();
      status = measure(entry->fd.get(), file);
    }
    entry->used = true;
    size = static_cast<std::uint64_t>(status.st_size);
    return *entry;
  }

  // Forgets (and closes) the files this commit did not use; keeps the others open.
  void end_commit() noexcept {
    std::erase_if(open, [](const Open& file) { return !file.used || !file.fd.is_open(); });
    for (Open& file : open) {
      file.used = false;
      file.recreated_directory = false;
      file.written = false;
      file.maybe_new = false;
    }
  }
};

FileSink::FileSink(std::shared_ptr<const FileCalls> calls)
    : calls_(calls ? std::move(calls) : std::make_shared<FileCalls>()), files_(std::make_unique<Files>()) {}

FileSink::~FileSink() = default;

void FileSink::append(const FileAppend& append, AppendOutcome& outcome) {
  const std::filesystem::path& file = outcome.file;
  outcome.records = append.records;
  outcome.bytes = append.bytes.size();
  const bool frame = append.frame_content_size.has_value();
  if (frame && files_->torn.contains(file)) {
    outcome.error = "not appending to " + file.string() + ": it ends in part of a zstd frame";
    outcome.torn = true;
    return;
  }
  Files::Open* open = nullptr;
  try {
    std::uint64_t size = 0;
    open = &files_->find_or_open(*calls_, file, outcome, size);
    outcome.placement.size_before = size;
    if (!frame && open->left_at != size && ends_without_newline(open->fd.get(), size, file)) {
      if (detail::write_fully(*calls_, open->fd.get(), "\n", file) != 1) throw_errno("write", file);
      outcome.placement.fragment_isolated = true;
    }
  } catch (const std::system_error& error) {
    outcome.error = error.what();
    return;
  }
  if (!open->written) open->maybe_new = *outcome.placement.size_before == 0;
  open->written = true;
  const std::uint64_t start = *outcome.placement.size_before + (outcome.placement.fragment_isolated ? 1 : 0);
  outcome.placement.payload_offset = start;
  open->left_at.reset();
  if (detail::write_fully(*calls_, open->fd.get(), append.bytes, file) == append.bytes.size()) {
    open->left_at = start + append.bytes.size();
    return;
  }
  outcome.error = errno_message("write", file);
  // What landed is measured, not inferred from the calls: a failed write may still have
  // put bytes in the file.
  std::optional<std::uint64_t> landed;
  if (struct stat status {}; ::fstat(open->fd.get(), &status) == 0) {
    const auto end = static_cast<std::uint64_t>(status.st_size);
    landed = std::min<std::uint64_t>(end > start ? end - start : 0, append.bytes.size());
  }
  // Part of a frame would end every reader's decoding there: it is cut off again, or
  // the file is closed to frames.
  if (frame && landed != std::uint64_t{0}) {
    if (calls_->ftruncate(open->fd.get(), static_cast<off_t>(start), file) == 0) {
      outcome.landed = 0;
      return;
    }
    files_->torn.insert(file);
    outcome.torn = true;
  }
  if (!landed) {
    outcome.touched = append.records;
    return;
  }
  outcome.landed = landed;
  if (frame) {
    outcome.touched = *landed == 0 ? 0 : append.records;
    return;
  }
  const std::string_view reached(append.bytes.data(), *landed);
  outcome.touched = static_cast<std::size_t>(std::count(reached.begin(), reached.end(), '\n')) +
                    (*landed != 0 && reached.back() != '\n' ? 1 : 0);
}

void FileSink::make_durable(std::span<AppendOutcome> outcomes) {
  const auto sync_directory = [&](const std::filesystem::path& directory, std::string& error) {
    const FileDescriptor fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() >= 0 && calls_->fsync(fd.get(), directory) == 0) return true;
    error = errno_message(fd.get() < 0 ? "open" : "fsync", directory);
    return false;
  };
  for (const Files::Open& file : files_->open) {
    if (!file.written) continue;
    std::string error;
    if (calls_->fsync(file.fd.get(), file.path) != 0) {
      error = errno_message("fsync", file.path);
    } else if (!file.maybe_new && files_->durable_names.contains(file.path)) {
      continue;
    } else {
      const std::filesystem::path directory = file.path.parent_path();
      const bool directory_durable = !file.recreated_directory && files_->durable_directories.contains(directory);
      if (sync_directory(directory, error) && (directory_durable || sync_directory(directory.parent_path(), error))) {
        files_->remember_durable(file.path);
        continue;
      }
    }
    for (AppendOutcome& outcome : outcomes) {
      if (outcome.file != file.path || !outcome.placement.payload_offset || outcome.error) continue;
      outcome.error = error;
      outcome.landed = outcome.bytes;
      outcome.touched = outcome.records;
    }
  }
}

void FileSink::end_commit() noexcept { files_->end_commit(); }

}  // namespace jsonl
