// What the durability and books tests share: system calls a test arms to fail or block
// (WriterOptions::durability.calls), signals with bounded waits, a fixture, and readers
// of the published document.
#pragma once

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "writer_fixture.hpp"

import jsonl.writer;

namespace durability_test {

namespace json = boost::json;
using namespace std::chrono_literals;
using jsonl_test::Log;

// A one-shot signal whose wait gives up after ten seconds and says so: a broken writer
// then fails the test instead of hanging it.
class Signal {
 public:
  void raise() const {
    {
      const std::lock_guard lock(mutex_);
      raised_ = true;
    }
    changed_.notify_all();
  }
  [[nodiscard]] bool wait() const {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] { return raised_; });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  mutable bool raised_ = false;
};

// System calls that fail or block when a test arms them. A data file is a ".jsonl" or
// ".jsonl.zst" one; the books' own files are left alone unless a rename is armed to fail.
class ScriptedCalls : public jsonl::FileCalls {
 public:
  // The next write of more than one byte to a data file lands `landed` bytes and then
  // fails with `error`.
  void cut_next_write(std::size_t landed, int error) {
    const std::lock_guard lock(mutex_);
    cut_ = landed;
    cut_error_ = error;
  }
  void fail_next_fsync(int error) { fsync_error_ = error; }
  // Every ftruncate of a data file fails with EIO from now on.
  void fail_truncates() { fail_truncates_ = true; }
  // The next fsync of a data file's directory fails with `error`.
  void fail_next_directory_fsync(int error) { directory_fsync_error_ = error; }
  // Data fsyncs wait for release() from now on; `entered` is raised at the first.
  void block_fsyncs() { blocking_ = true; }
  // The books' fsyncs wait for release() from now on; `books_entered` is raised at the
  // first, `books_fsync_returned` when it returns.
  void block_books_fsyncs() { blocking_books_ = true; }
  void release() { released_.raise(); }
  void fail_renames(bool fail) { fail_renames_ = fail; }

  Signal entered;
  Signal blocked_fsync_returned;
  Signal books_entered;
  Signal books_fsync_returned;
  mutable std::atomic<int> data_fsyncs{0};
  mutable std::atomic<int> data_directory_fsyncs{0};

  // Waits until `count` renames (publications) have landed.
  bool await_publications(int count) {
    std::unique_lock lock(mutex_);
    return published_.wait_for(lock, 10s, [&] { return renames_ >= count; });
  }

  ssize_t write(int fd, std::string_view bytes, const std::filesystem::path& file) const override {
    if (is_data(file) && bytes.size() > 1) {
      const std::lock_guard lock(mutex_);
      if (cut_) {
        const std::size_t landed = *cut_;
        cut_.reset();
        if (landed != 0) FileCalls::write(fd, bytes.substr(0, landed), file);
        errno = cut_error_;
        return -1;
      }
    }
    return FileCalls::write(fd, bytes, file);
  }

  // The books' directory, when made, is followed by an fsync of its parent: that one is
  // the books', not a data file's.
  int mkdir(const std::filesystem::path& directory, mode_t mode) const override {
    const int result = FileCalls::mkdir(directory, mode);
    if (result == 0 && directory.filename() == "_writer") books_directory_made_ = true;
    return result;
  }

  int fsync(int fd, const std::filesystem::path& file) const override {
    if (std::filesystem::is_directory(file) && books_directory_made_.exchange(false)) return FileCalls::fsync(fd, file);
    if (std::filesystem::is_directory(file) && file.filename() != "_writer") {
      ++data_directory_fsyncs;
      if (const int error = directory_fsync_error_.exchange(0); error != 0) {
        errno = error;
        return -1;
      }
      return FileCalls::fsync(fd, file);
    }
    if (!is_data(file)) {
      if (!blocking_books_ || file.extension() != ".partial") return FileCalls::fsync(fd, file);
      books_entered.raise();
      (void)released_.wait();
      const int result = FileCalls::fsync(fd, file);
      books_fsync_returned.raise();
      return result;
    }
    ++data_fsyncs;
    if (blocking_) {
      const bool first = !entered_once_.exchange(true);
      if (first) entered.raise();
      (void)released_.wait();
      const int result = FileCalls::fsync(fd, file);
      if (first) blocked_fsync_returned.raise();
      return result;
    }
    if (const int error = fsync_error_.exchange(0); error != 0) {
      errno = error;
      return -1;
    }
    return FileCalls::fsync(fd, file);
  }

  int ftruncate(int fd, off_t size, const std::filesystem::path& file) const override {
    if (is_data(file) && fail_truncates_) {
      errno = EIO;
      return -1;
    }
    return FileCalls::ftruncate(fd, size, file);
  }

  int rename(const std::filesystem::path& from, const std::filesystem::path& to) const override {
    if (fail_renames_) {
      errno = EIO;
      return -1;
    }
    const int result = FileCalls::rename(from, to);
    {
      const std::lock_guard lock(mutex_);
      ++renames_;
    }
    published_.notify_all();
    return result;
  }

 private:
  static bool is_data(const std::filesystem::path& file) {
    return file.extension() == ".jsonl" || file.extension() == ".zst";
  }

  mutable std::mutex mutex_;
  mutable std::condition_variable published_;
  mutable int renames_ = 0;
  mutable std::optional<std::size_t> cut_;
  int cut_error_ = 0;
  mutable std::atomic<int> fsync_error_{0};
  mutable std::atomic<int> directory_fsync_error_{0};
  mutable std::atomic<bool> books_directory_made_{false};
  std::atomic<bool> blocking_{false};
  std::atomic<bool> blocking_books_{false};
  mutable std::atomic<bool> entered_once_{false};
  Signal released_;
  std::atomic<bool> fail_renames_{false};
  std::atomic<bool> fail_truncates_{false};
};

// Test options with durability on through `calls`, one file name for every writer of the
// test (a fixed clock), and no publication by time unless a test asks for it.
inline jsonl::WriterOptions durable_options(const std::filesystem::path& directory, Log& log,
                                     std::shared_ptr<ScriptedCalls> calls) {
  auto options = jsonl_test::test_options(directory, log);
  options.clock = [] { return std::chrono::sys_days(std::chrono::year(2026) / 1 / 1) + 0s; };
  options.durability = {.enabled = true, .publish_interval = 1h, .calls = std::move(calls)};
  return options;
}

using Writer = jsonl::JsonlRecordWriter<json::value>;

// Lines keep their UTF-8: the cut below falls inside a character.
inline std::unique_ptr<Writer> make_writer(jsonl::WriterOptions options) {
  return std::make_unique<Writer>(std::move(options),
                                  std::make_shared<jsonl::JsonLineFormat>(jsonl::JsonTextOptions{.ensure_ascii = false}));
}

inline json::value record(int index, std::string_view text = "ok") {
  return json::object{{"session", "s"}, {"index", index}, {"text", text}};
}

inline std::string line_of(int index, std::string_view text) {
  json::value value = record(index, text);
  std::string line;
  jsonl::JsonLineFormat(jsonl::JsonTextOptions{.ensure_ascii = false}).append_line(value, line);
  return line;
}

inline void submit(Writer& writer, int count, int start = 0, std::string_view text = "ok") {
  for (int index = start; index < start + count; ++index) BOOST_TEST_REQUIRE(writer.submit(record(index, text)));
}

inline json::value document_of(const Writer& writer) {
  return json::parse(jsonl_test::read_file(writer.books_file().value()));
}

inline const json::object& counts_of(const json::value& document) { return document.at("counts").as_object(); }

inline std::uint64_t count(const json::value& document, std::string_view name) {
  return counts_of(document).at(name).to_number<std::uint64_t>();
}

inline std::uint64_t dropped(const json::value& document, std::string_view reason) {
  return counts_of(document).at("dropped").at(reason).to_number<std::uint64_t>();
}

inline const json::object& only_file(const json::value& document) {
  BOOST_TEST_REQUIRE(document.at("shards").as_array().size() == 1u);
  return document.at("shards").as_array()[0].as_object();
}

inline bool balances(const json::value& document) {
  std::uint64_t in_files = 0;
  for (const json::value& file : document.at("shards").as_array()) {
    in_files += file.at("persisted_records").to_number<std::uint64_t>();
  }
  std::uint64_t drops = 0;
  for (const auto& [reason, value] : counts_of(document).at("dropped").as_object()) {
    drops += value.to_number<std::uint64_t>();
  }
  return count(document, "submitted") ==
             count(document, "persisted") + drops + count(document, "unknown") + count(document, "pending") &&
         in_files == count(document, "persisted");
}

inline jsonl::FileCheck only_check(const std::filesystem::path& directory, const json::value& document) {
  const jsonl::BooksCheck books = jsonl::verify_books(directory, document);
  BOOST_TEST(!books.error.has_value());
  BOOST_TEST(books.balanced);
  BOOST_TEST_REQUIRE(books.files.size() == 1u);
  return books.files[0];
}

// Spins (yielding) until `done`, for at most ten seconds.
template <class Done>
bool eventually(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// What every case starts from: a scratch directory, a log, and the scripted calls.
struct Durable {
  jsonl_test::ScratchDirectory directory;
  Log log;
  std::shared_ptr<ScriptedCalls> calls = std::make_shared<ScriptedCalls>();
  jsonl::WriterOptions durable() { return durable_options(directory.path(), log, calls); }
};

}  // namespace durability_test
