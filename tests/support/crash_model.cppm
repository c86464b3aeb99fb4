// Every crash point of a recorded run, and what a crash there may leave on disk, by
// POSIX's worst case (the model of ALICE, OSDI 2014, and CrashMonkey, OSDI 2018):
//
// - bytes written to a file since its last fsync are lost, or survive as a prefix of
//   what was written since (a truncation or a cut to a size included), cut anywhere;
// - a name created, renamed or unlinked in a directory since that directory's last fsync
//   may or may not be there: each directory is either as it was at its last fsync or as
//   it is now.
//
// CallRecorder records what each call a writer makes through FileCalls changed;
// explore() replays every prefix of that log (Disk), writes each state a crash there may
// leave into a directory, and reconciles it: every document that survives must be
// whole, balanced and verified, every record it claims on disk and parsable.
//
// A module rather than a header: the test files that use it include headers that import
// modules too, and no #include may follow an import.
module;

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "test_support.hpp"

export module crash_model;

import jsonl.writer;

export namespace crash_model {

// One change to the disk, paths relative to the recorded root.
struct Change {
  enum Kind { create, truncate, shorten, write, fsync_file, fsync_directory, rename, mkdir, unlink } kind;
  std::string path;
  std::string to;  // rename's new name
  std::uint64_t offset = 0;  // write's; shorten's new size
  std::string bytes;  // write's
};

// Makes every call through `inner` and records what it changed under `root`.
class CallRecorder : public jsonl::FileCalls {
 public:
  CallRecorder(std::filesystem::path root, std::shared_ptr<const jsonl::FileCalls> inner)
      : root_(std::move(root)), inner_(std::move(inner)) {}

  int open(const std::filesystem::path& file, int flags, mode_t mode) const override {
    const bool existed = std::filesystem::exists(file);
    const int fd = inner_->open(file, flags, mode);
    if (fd >= 0 && !existed && (flags & O_CREAT)) note({Change::create, relative(file)});
    if (fd >= 0 && (flags & O_TRUNC) && existed) note({Change::truncate, relative(file)});
    return fd;
  }
  ssize_t write(int fd, std::string_view bytes, const std::filesystem::path& file) const override {
    struct stat status {};
    const bool append = (::fcntl(fd, F_GETFL) & O_APPEND) != 0;
    const off_t offset = append ? (::fstat(fd, &status) == 0 ? status.st_size : -1) : ::lseek(fd, 0, SEEK_CUR);
    const ssize_t written = inner_->write(fd, bytes, file);
    // A failed write may still have landed a prefix (a test's cut write does): what
    // the file grew by is what landed.
    std::size_t landed = written > 0 ? static_cast<std::size_t>(written) : 0;
    const int error = errno;
    if (written < 0 && offset >= 0 && ::fstat(fd, &status) == 0 && status.st_size > offset) {
      landed = std::min(bytes.size(), static_cast<std::size_t>(status.st_size - offset));
    }
    if (landed > 0) {
      note({Change::write, relative(file), {}, static_cast<std::uint64_t>(offset), std::string(bytes.substr(0, landed))});
    }
    errno = error;
    return written;
  }
  int ftruncate(int fd, off_t size, const std::filesystem::path& file) const override {
    const int result = inner_->ftruncate(fd, size, file);
    if (result == 0) note({Change::shorten, relative(file), {}, static_cast<std::uint64_t>(size)});
    return result;
  }
  int fsync(int fd, const std::filesystem::path& file) const override {
    struct stat status {};
    const bool directory = ::fstat(fd, &status) == 0 && S_ISDIR(status.st_mode);
    const int result = inner_->fsync(fd, file);
    if (result == 0) note({directory ? Change::fsync_directory : Change::fsync_file, relative(file)});
    return result;
  }
  int rename(const std::filesystem::path& from, const std::filesystem::path& to) const override {
    const int result = inner_->rename(from, to);
    if (result == 0) note({Change::rename, relative(from), relative(to)});
    return result;
  }
  int mkdir(const std::filesystem::path& directory, mode_t mode) const override {
    const int result = inner_->mkdir(directory, mode);
    if (result == 0) note({Change::mkdir, relative(directory)});
    return result;
  }
  int unlink(const std::filesystem::path& file) const override {
    const int result = inner_->unlink(file);
    if (result == 0) note({Change::unlink, relative(file)});
    return result;
  }

  std::vector<Change> log() const {
    const std::lock_guard lock(mutex_);
    return log_;
  }

 private:
  std::string relative(const std::filesystem::path& path) const {
    return path.lexically_normal().lexically_relative(root_).generic_string();
  }
  void note(Change change) const {
    const std::lock_guard lock(mutex_);
    log_.push_back(std::move(change));
  }

  std::filesystem::path root_;
  std::shared_ptr<const jsonl::FileCalls> inner_;
  mutable std::mutex mutex_;
  mutable std::vector<Change> log_;
};

}  // namespace crash_model

namespace crash_model {

// A disk as a prefix of the log leaves it: files by inode, with what was fsynced and
// what was changed since; directories' entries now and at their last fsync. The root
// ("." ) exists from the start, durably.

class Disk {
 public:
  struct File {
    std::string durable;             // as of its last fsync
    std::vector<Change> since;       // truncations, cuts and writes after it, in order
  };
  using Entries = std::map<std::string, int>;  // path -> inode (-1: a directory)

  void apply(const Change& change) {
    switch (change.kind) {
      case Change::create:
        files_.push_back({});
        entries_[change.path] = static_cast<int>(files_.size()) - 1;
        break;
      case Change::mkdir:
        entries_[change.path] = -1;
        break;
      case Change::truncate:
      case Change::shorten:
      case Change::write:
        if (const auto found = entries_.find(change.path); found != entries_.end() && found->second >= 0) {
          files_[static_cast<std::size_t>(found->second)].since.push_back(change);
        }
        break;
      case Change::fsync_file:
        if (const auto found = entries_.find(change.path); found != entries_.end() && found->second >= 0) {
          File& file = files_[static_cast<std::size_t>(found->second)];
          file.durable = content(file, file.since.size(), std::nullopt);
          file.since.clear();
        }
        break;
      case Change::fsync_directory:
        durable_[change.path] = children(entries_, change.path);
        break;
      case Change::rename:
        if (const auto found = entries_.find(change.path); found != entries_.end()) {
          entries_[change.to] = found->second;
          entries_.erase(change.path);
        }
        break;
      case Change::unlink:
        entries_.erase(change.path);
        break;
    }
  }

  // The content of `file` after its durable bytes and the first `changes` changes since,
  // the last of them cut to its first `cut` bytes when given.
  static std::string content(const File& file, std::size_t changes, std::optional<std::size_t> cut) {
    std::string bytes = file.durable;
    for (std::size_t i = 0; i < changes; ++i) {
      const Change& change = file.since[i];
      if (change.kind == Change::truncate || change.kind == Change::shorten) {
        bytes.resize(change.kind == Change::truncate ? 0 : std::min<std::size_t>(bytes.size(), change.offset));
        continue;
      }
      const std::string_view written =
          std::string_view(change.bytes).substr(0, i + 1 == changes && cut ? *cut : change.bytes.size());
      if (bytes.size() < change.offset) bytes.resize(change.offset, '\0');
      bytes.replace(change.offset, std::min(written.size(), bytes.size() - change.offset), written);
    }
    return bytes;
  }

  // Every state a crash now may leave: each directory as at its last fsync or as now,
  // and each file's changes since its fsync lost, kept, or cut at a few places
  // (mid-change, and inside a multi-byte character when there is one), one file cut at
  // a time. Calls `state` with the entries and the content of each inode.
  void crash_states(const std::function<void(const Entries&, const std::vector<std::string>&)>& state) const {
    std::vector<std::string> directories{"."};
    for (const auto& [path, inode] : entries_) {
      if (inode < 0) directories.push_back(path);
    }
    std::vector<std::string> lost, kept;
    for (const File& file : files_) {
      lost.push_back(file.durable);
      kept.push_back(content(file, file.since.size(), std::nullopt));
    }
    const std::size_t combinations = std::size_t{1} << std::min<std::size_t>(directories.size(), 8);
    for (std::size_t mask = 0; mask < combinations; ++mask) {
      const Entries entries = visible(directories, mask);
      state(entries, lost);
      state(entries, kept);
      for (std::size_t inode = 0; inode < files_.size(); ++inode) {
        const File& file = files_[inode];
        for (std::size_t change = 1; change <= file.since.size(); ++change) {
          for (const std::size_t cut : cuts(file.since[change - 1])) {
            std::vector<std::string> contents = lost;
            contents[inode] = content(file, change, cut);
            state(entries, contents);
          }
        }
      }
    }
  }

 private:
  static Entries children(const Entries& entries, const std::string& directory) {
    Entries found;
    for (const auto& [path, inode] : entries) {
      if (parent(path) == directory) found.emplace(path, inode);
    }
    return found;
  }
  static std::string parent(const std::string& path) {
    const std::string up = std::filesystem::path(path).parent_path().generic_string();
    return up.empty() ? "." : up;
  }

  // Each directory's entries as now (its bit set in `mask`) or as at its last fsync
  // (none if it never was), then only what is reachable from the root.
  Entries visible(const std::vector<std::string>& directories, std::size_t mask) const {
    std::map<std::string, Entries> listing;
    for (std::size_t d = 0; d < directories.size(); ++d) {
      const std::string& directory = directories[d];
      if (d < 8 && (mask >> d & 1)) {
        listing[directory] = children(entries_, directory);
      } else if (const auto durable = durable_.find(directory); durable != durable_.end()) {
        listing[directory] = durable->second;
      }
    }
    Entries reachable;
    std::vector<std::string> pending{"."};
    while (!pending.empty()) {
      const std::string directory = pending.back();
      pending.pop_back();
      for (const auto& [path, inode] : listing[directory]) {
        reachable.emplace(path, inode);
        if (inode < 0) pending.push_back(path);
      }
    }
    return reachable;
  }

  // Where a change may be cut: after its first byte, in its middle, and inside its
  // first multi-byte character; a truncation or a cut to a size is whole or not at all.
  static std::vector<std::size_t> cuts(const Change& change) {
    if (change.kind == Change::truncate || change.kind == Change::shorten) return {0};
    std::set<std::size_t> at{std::size_t{0}, std::min<std::size_t>(1, change.bytes.size()), change.bytes.size() / 2,
                             change.bytes.size()};
    for (std::size_t i = 0; i < change.bytes.size(); ++i) {
      if (static_cast<unsigned char>(change.bytes[i]) >= 0xC0) {
        at.insert(i + 1);
        break;
      }
    }
    return {at.begin(), at.end()};
  }

  std::vector<File> files_;
  Entries entries_;
  std::map<std::string, Entries> durable_;  // directory -> its entries at its last fsync
};

// Writes a crash state into `root` (made, or emptied).
void materialize(const std::filesystem::path& root, const Disk::Entries& entries,
                        const std::vector<std::string>& contents) {
  std::filesystem::create_directories(root);
  for (const auto& [path, inode] : entries) {
    if (inode < 0) std::filesystem::create_directories(root / path);
  }
  for (const auto& [path, inode] : entries) {
    if (inode < 0) continue;
    std::filesystem::create_directories((root / path).parent_path());
    const std::string& bytes = contents[static_cast<std::size_t>(inode)];
    std::ofstream(root / path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
}

// What is wrong with the books in `root`, or nothing.
std::string books_problem(const std::filesystem::path& root) {
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(root);
  for (const jsonl::BooksCheck& books : reconciliation.generations) {
    const std::string name = books.document.generic_string();
    if (books.error) return name + ": " + *books.error;
    if (!books.balanced) return name + " does not balance";
    for (const jsonl::FileCheck& file : books.files) {
      if (file.verified()) continue;
      return name + ": " + file.file + " not verified (" + std::to_string(file.records) + " of " +
             std::to_string(file.persisted_records) + " records, " + std::to_string(file.bad_lines) + " bad lines" +
             (file.error ? ", " + *file.error : "") + ")";
    }
  }
  return "";
}

export struct Exploration {
  std::size_t points = 0;  // crash points: one before each change, and the end
  std::size_t states = 0;  // distinct crash states checked
  std::string failure;     // the first state whose books fail, and why; empty if none
};

// Checks every crash state of `log` (states alike once), stopping at the first that
// fails.
export Exploration explore(const std::vector<Change>& log) {
  Exploration exploration{.points = log.size() + 1};
  Disk disk;
  std::set<std::size_t> seen;
  const jsonl_test::ScratchDirectory scratch;
  const auto fingerprint = [](const Disk::Entries& entries, const std::vector<std::string>& contents) {
    std::size_t hash = 0;
    const auto mix = [&](std::size_t value) { hash ^= value + 0x9e3779b97f4a7c15ULL + (hash << 6) + (hash >> 2); };
    for (const auto& [path, inode] : entries) {
      mix(std::hash<std::string>{}(path));
      mix(inode < 0 ? 0 : std::hash<std::string>{}(contents[static_cast<std::size_t>(inode)]) + 1);
    }
    return hash;
  };
  for (std::size_t point = 0; point <= log.size() && exploration.failure.empty(); ++point) {
    if (point > 0) disk.apply(log[point - 1]);
    disk.crash_states([&](const Disk::Entries& entries, const std::vector<std::string>& contents) {
      if (!exploration.failure.empty() || !seen.insert(fingerprint(entries, contents)).second) return;
      ++exploration.states;
      const std::filesystem::path root = scratch.path() / std::to_string(exploration.states);
      materialize(root, entries, contents);
      if (const std::string problem = books_problem(root); !problem.empty()) {
        exploration.failure = "crash after change " + std::to_string(point) + " of " + std::to_string(log.size()) +
                              ": " + problem;
      }
      std::filesystem::remove_all(root);
    });
  }
  return exploration;
}

}  // namespace crash_model
