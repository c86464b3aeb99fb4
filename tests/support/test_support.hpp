// Helpers shared by the test suites: a scratch directory, a log sink that records what
// the writer says, and file reading.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jsonl_test {

// A fresh directory under the system's temporary directory, removed with its contents.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "jsonl-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Records every message a writer logs. Copies of the sink share the record, so it may
// outlive the test's own object.
template <class Level>
class LogRecord {
 public:
  struct Entry {
    Level level;
    std::string message;
  };

  auto sink() {
    return [entries = entries_](Level level, std::string_view message) {
      const std::lock_guard lock(entries->mutex);
      entries->list.push_back({level, std::string(message)});
    };
  }

  std::vector<Entry> entries() const {
    const std::lock_guard lock(entries_->mutex);
    return entries_->list;
  }

  // Messages at `level`, in order.
  std::vector<std::string> at(Level level) const {
    std::vector<std::string> messages;
    for (const Entry& entry : entries()) {
      if (entry.level == level) messages.push_back(entry.message);
    }
    return messages;
  }

 private:
  struct Shared {
    mutable std::mutex mutex;
    std::vector<Entry> list;
  };
  std::shared_ptr<Shared> entries_ = std::make_shared<Shared>();
};

inline std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

inline std::vector<std::string> read_lines(const std::filesystem::path& file) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(file));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// A wall clock the test moves by hand (WriterOptions::clock).
struct ManualClock {
  std::shared_ptr<std::atomic<std::int64_t>> seconds = std::make_shared<std::atomic<std::int64_t>>(1'790'000'000);
  std::function<std::chrono::system_clock::time_point()> function() const {
    return [seconds = seconds] { return std::chrono::system_clock::time_point(std::chrono::seconds(seconds->load())); };
  }
  void advance(std::chrono::seconds by) const { seconds->fetch_add(by.count()); }
};

}  // namespace jsonl_test
