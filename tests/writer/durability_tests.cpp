// Durable accounting: every record persisted (written and fsync()ed), dropped by reason,
// unknown (its append failed after bytes may have landed) or pending; the books published
// beside the files; and the verifier and reconciler that read them back. The failures
// come through WriterOptions::durability.calls: a write that lands a prefix and fails, an
// fsync that fails or blocks, a rename that fails.
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

namespace json = boost::json;
using namespace std::chrono_literals;
using jsonl_test::Log;

namespace {

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

// System calls that fail or block when a test arms them. A data file is a ".jsonl" one;
// the books' own files are left alone unless a rename is armed to fail.
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

  int fsync(int fd, const std::filesystem::path& file) const override {
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
  static bool is_data(const std::filesystem::path& file) { return file.extension() == ".jsonl"; }

  mutable std::mutex mutex_;
  mutable std::condition_variable published_;
  mutable int renames_ = 0;
  mutable std::optional<std::size_t> cut_;
  int cut_error_ = 0;
  mutable std::atomic<int> fsync_error_{0};
  mutable std::atomic<int> directory_fsync_error_{0};
  std::atomic<bool> blocking_{false};
  std::atomic<bool> blocking_books_{false};
  mutable std::atomic<bool> entered_once_{false};
  Signal released_;
  std::atomic<bool> fail_renames_{false};
};

// Test options with durability on through `calls`, one file name for every writer of the
// test (a fixed clock), and no publication by time unless a test asks for it.
jsonl::WriterOptions durable_options(const std::filesystem::path& directory, Log& log,
                                     std::shared_ptr<ScriptedCalls> calls) {
  auto options = jsonl_test::test_options(directory, log);
  options.clock = [] { return std::chrono::sys_days(std::chrono::year(2026) / 1 / 1) + 0s; };
  options.durability = {.enabled = true, .publish_interval = 1h, .calls = std::move(calls)};
  return options;
}

using Writer = jsonl::JsonlRecordWriter<json::value>;

// Lines keep their UTF-8: the cut below falls inside a character.
std::unique_ptr<Writer> make_writer(jsonl::WriterOptions options) {
  return std::make_unique<Writer>(std::move(options),
                                  std::make_shared<jsonl::JsonLineFormat>(jsonl::JsonTextOptions{.ensure_ascii = false}));
}

json::value record(int index, std::string_view text = "ok") {
  return json::object{{"session", "s"}, {"index", index}, {"text", text}};
}

std::string line_of(int index, std::string_view text) {
  json::value value = record(index, text);
  std::string line;
  jsonl::JsonLineFormat(jsonl::JsonTextOptions{.ensure_ascii = false}).append_line(value, line);
  return line;
}

void submit(Writer& writer, int count, int start = 0, std::string_view text = "ok") {
  for (int index = start; index < start + count; ++index) BOOST_TEST_REQUIRE(writer.submit(record(index, text)));
}

json::value document_of(const Writer& writer) {
  return json::parse(jsonl_test::read_file(writer.books_file().value()));
}

const json::object& counts_of(const json::value& document) { return document.at("counts").as_object(); }

std::uint64_t count(const json::value& document, std::string_view name) {
  return counts_of(document).at(name).to_number<std::uint64_t>();
}

std::uint64_t dropped(const json::value& document, std::string_view reason) {
  return counts_of(document).at("dropped").at(reason).to_number<std::uint64_t>();
}

const json::object& only_file(const json::value& document) {
  BOOST_TEST_REQUIRE(document.at("files").as_array().size() == 1u);
  return document.at("files").as_array()[0].as_object();
}

bool balances(const json::value& document) {
  std::uint64_t in_files = 0;
  for (const json::value& file : document.at("files").as_array()) {
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

jsonl::FileCheck only_check(const std::filesystem::path& directory, const json::value& document) {
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

}  // namespace

BOOST_FIXTURE_TEST_SUITE(durability, Durable)

BOOST_AUTO_TEST_CASE(normal_appends_are_persisted_and_reconcile) {
  auto writer = make_writer(durable());
  writer->start();
  submit(*writer, 50);
  writer->close();

  const json::value document = document_of(*writer);
  BOOST_TEST(document.at("schema") == "jsonl-writer-books/1");
  BOOST_TEST(document.at("closed") == true);
  BOOST_TEST(writer->books_file()->filename() == std::string(document.at("generation").as_string()) + ".json");
  BOOST_TEST(json::serialize(counts_of(document)) ==
             R"({"submitted":50,"persisted":50,"dropped":{"queue_full":0,"malformed":0,"serialize_error":0,)"
             R"("write_error":0,"unexpected_write":0,"abandoned":0},"unknown":0,"pending":0})");
  const json::object& file = only_file(document);
  BOOST_TEST(file.at("file").as_string() == writer->path()->filename().string());
  BOOST_TEST(file.at("start_offset") == 0);
  BOOST_TEST(file.at("persisted_end").to_number<std::uint64_t>() == std::filesystem::file_size(*writer->path()));
  const jsonl::FileCheck check = only_check(directory.path(), document);
  BOOST_TEST(check.records == 50u);
  BOOST_TEST(check.bad_lines == 0u);
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
  BOOST_TEST(writer->stats().written == 50u);
  BOOST_TEST(jsonl_test::accounting_holds(writer->stats()));
}

BOOST_AUTO_TEST_CASE(a_record_counts_only_after_its_fsync) {
  auto writer = make_writer(durable());
  calls->block_fsyncs();
  writer->start();
  submit(*writer, 3);
  BOOST_TEST_REQUIRE(calls->entered.wait());
  // Written, not yet fsync()ed: not persisted.
  BOOST_TEST(std::filesystem::file_size(*writer->path()) > 0u);
  BOOST_TEST(writer->stats().written == 0u);
  BOOST_TEST(writer->stats().unknown == 0u);
  calls->release();
  BOOST_TEST(writer->flush(10s));
  BOOST_TEST(writer->stats().written == 3u);
  BOOST_TEST(count(document_of(*writer), "persisted") == 3u);
}

BOOST_AUTO_TEST_CASE(a_new_file_counts_only_once_its_directory_is_fsynced_and_only_once) {
  auto writer = make_writer(durable());
  calls->fail_next_directory_fsync(EIO);
  submit(*writer, 3);
  writer->start();
  BOOST_TEST(writer->flush(10s));
  // The lines are fsync()ed, but the file's name may not survive a crash.
  BOOST_TEST(writer->stats().written == 0u);
  BOOST_TEST(writer->stats().unknown == 3u);
  submit(*writer, 1, 3);
  BOOST_TEST(writer->flush(10s));
  BOOST_TEST(writer->stats().written == 1u);
  submit(*writer, 1, 4);
  writer->close();
  BOOST_TEST(writer->stats().written == 2u);
  BOOST_TEST(calls->data_directory_fsyncs.load() == 2);  // the failed one, then once
  BOOST_TEST(balances(document_of(*writer)));
}

BOOST_AUTO_TEST_CASE(a_cut_inside_a_utf8_character_leaves_two_unknown_and_the_next_append_parses) {
  auto writer = make_writer(durable());
  const std::string first = line_of(0, "你好");
  const std::string second = line_of(1, "你好");
  // Inside the first byte of the second record's three-byte character.
  const std::size_t cut = first.size() + second.find("你") + 1;
  calls->cut_next_write(cut, ENOSPC);
  submit(*writer, 4, 0, "你好");  // before start: one batch, one append
  writer->start();
  BOOST_TEST(writer->flush(10s));
  // Record 0 landed whole and record 1 in part: neither is claimed. Records 2 and 3
  // never reached the file.
  BOOST_TEST(writer->stats().written == 0u);
  BOOST_TEST(writer->stats().unknown == 2u);
  BOOST_TEST(writer->stats().dropped_write_error == 2u);

  submit(*writer, 1, 4, "after");
  writer->close();
  const json::value document = document_of(*writer);
  BOOST_TEST(balances(document));
  BOOST_TEST(count(document, "persisted") == 1u);
  BOOST_TEST(count(document, "unknown") == 2u);
  const json::object& file = only_file(document);
  BOOST_TEST(file.at("fragments_isolated") == 1);
  BOOST_TEST(json::serialize(file.at("unknown_extents")) ==
             R"([{"start":0,"landed":)" + std::to_string(cut) + R"(,"records":2}])");
  const jsonl::FileCheck check = only_check(directory.path(), document);
  BOOST_TEST(check.records == 1u);
  BOOST_TEST(check.bad_lines == 0u);
  BOOST_TEST(check.unknown_lines == 2u);
  // The fragment is one bad line of the file; the record after it parses untouched.
  const std::vector<std::string> lines = jsonl_test::read_lines(*writer->path());
  BOOST_TEST_REQUIRE(lines.size() == 3u);
  BOOST_TEST(json::parse(lines[2]) == record(4, "after"));
  boost::system::error_code error;
  json::parse(lines[1], error);
  BOOST_TEST(error.failed());
}

BOOST_AUTO_TEST_CASE(a_full_disk_drops_the_group_and_a_later_append_lands) {
  auto writer = make_writer(durable());
  calls->cut_next_write(0, EDQUOT);
  submit(*writer, 3);
  writer->start();
  BOOST_TEST(writer->flush(10s));
  BOOST_TEST(writer->stats().dropped_write_error == 3u);
  BOOST_TEST(writer->stats().unknown == 0u);

  submit(*writer, 2, 3);
  writer->close();
  const json::value document = document_of(*writer);
  BOOST_TEST(balances(document));
  BOOST_TEST(count(document, "persisted") == 2u);
  BOOST_TEST(dropped(document, "write_error") == 3u);
  BOOST_TEST(jsonl_test::contains(document.at("errors").at("last_error").as_string(), "Disk quota exceeded"));
  const jsonl::FileCheck check = only_check(directory.path(), document);
  BOOST_TEST(check.records == 2u);
  BOOST_TEST(check.bad_lines == 0u);
  BOOST_TEST(log.at(jsonl::LogLevel::warning) ==
             (std::vector<std::string>{"Failed to write test JSONL: write " + writer->path()->string() +
                                           ": Disk quota exceeded",
                                       "Resumed writing test JSONL after 3 records were lost"}));
}

BOOST_AUTO_TEST_CASE(a_failed_fsync_leaves_its_records_unknown) {
  auto writer = make_writer(durable());
  calls->fail_next_fsync(EIO);
  submit(*writer, 3);
  writer->start();
  BOOST_TEST(writer->flush(10s));
  BOOST_TEST(writer->stats().written == 0u);
  BOOST_TEST(writer->stats().unknown == 3u);

  submit(*writer, 1, 3);
  writer->close();
  const json::value document = document_of(*writer);
  BOOST_TEST(balances(document));
  BOOST_TEST(count(document, "persisted") == 1u);
  BOOST_TEST(count(document, "unknown") == 3u);
  const jsonl::FileCheck check = only_check(directory.path(), document);
  BOOST_TEST(check.records == 1u);
  BOOST_TEST(check.bad_lines == 0u);
  BOOST_TEST(check.unknown_lines == 3u);
}

BOOST_AUTO_TEST_CASE(a_stalled_filesystem_with_a_saturated_queue_still_balances) {
  auto options = durable();
  options.queue_size = 64;
  options.batch_size = 8;
  auto writer = make_writer(std::move(options));
  calls->block_fsyncs();
  writer->start();
  submit(*writer, 1);
  BOOST_TEST_REQUIRE(calls->entered.wait());
  // One record stuck in fsync; far more than the writer can hold behind it.
  int accepted = 1;
  for (int index = 1; index < 1000; ++index) accepted += writer->submit(record(index));
  const jsonl::WriterStats stalled = writer->stats();
  BOOST_TEST(stalled.written == 0u);
  BOOST_TEST(stalled.dropped_queue_full == 1000u - accepted);
  BOOST_TEST(accepted < 1000);

  calls->release();
  writer->close();
  const json::value document = document_of(*writer);
  BOOST_TEST(balances(document));
  BOOST_TEST(count(document, "submitted") == 1000u);
  BOOST_TEST(count(document, "persisted") == static_cast<std::uint64_t>(accepted));
  BOOST_TEST(dropped(document, "queue_full") == 1000u - accepted);
  BOOST_TEST(count(document, "pending") == 0u);
  BOOST_TEST(only_check(directory.path(), document).records == static_cast<std::uint64_t>(accepted));
}

BOOST_AUTO_TEST_CASE(batches_waiting_behind_a_slow_fsync_are_committed_together) {
  auto options = durable();
  options.queue_size = 400;
  options.batch_size = 1;  // 16 batches a round
  auto writer = make_writer(std::move(options));
  calls->block_fsyncs();
  writer->start();
  submit(*writer, 1);
  BOOST_TEST_REQUIRE(calls->entered.wait());
  submit(*writer, 300, 1);
  // Without group commit the drain would wait with a round of its own and the rest would
  // stay queued.
  BOOST_TEST_REQUIRE(eventually([&] { return writer->stats().queue_depth == 0; }));
  calls->release();
  writer->close();
  BOOST_TEST(writer->stats().written == 301u);
  BOOST_TEST(calls->data_fsyncs.load() <= 3);
}

BOOST_AUTO_TEST_CASE(a_shutdown_during_a_stall_claims_nothing_in_flight) {
  auto options = durable();
  options.shutdown_timeout = 200ms;
  auto writer = make_writer(std::move(options));
  calls->block_fsyncs();
  writer->start();
  submit(*writer, 1);
  BOOST_TEST_REQUIRE(calls->entered.wait());
  submit(*writer, 5, 1);
  writer->close();
  const std::string published = jsonl_test::read_file(writer->books_file().value());
  const json::value document = json::parse(published);
  BOOST_TEST(document.at("closed") == true);
  BOOST_TEST(balances(document));
  // The record stuck in fsync may yet land, so it is not claimed; the rest was never written.
  BOOST_TEST(count(document, "unknown") == 1u);
  BOOST_TEST(dropped(document, "abandoned") == 5u);
  BOOST_TEST(count(document, "persisted") == 0u);

  calls->release();
  BOOST_TEST_REQUIRE(calls->blocked_fsync_returned.wait());
  BOOST_TEST(writer->flush(0ms));
  BOOST_TEST(writer->stats().written == 0u);
  BOOST_TEST(jsonl_test::accounting_holds(writer->stats()));
  BOOST_TEST(jsonl_test::read_file(writer->books_file().value()) == published);
}

BOOST_AUTO_TEST_CASE(a_publication_stuck_in_the_filesystem_does_not_hold_up_close) {
  auto options = durable();
  options.shutdown_timeout = 200ms;
  auto writer = make_writer(std::move(options));
  calls->block_books_fsyncs();
  writer->start();
  BOOST_TEST_REQUIRE(calls->books_entered.wait());  // the first document, stuck
  submit(*writer, 3);
  writer->close();
  BOOST_TEST(log.at(jsonl::LogLevel::warning) ==
             (std::vector<std::string>{"Timed out flushing test JSONL; dropping remaining records",
                                       "Timed out publishing the closed test JSONL books"}),
             boost::test_tools::per_element());
  BOOST_TEST(writer->stats().abandoned == 3u);
  calls->release();
  BOOST_TEST_REQUIRE(calls->books_fsync_returned.wait());
}

BOOST_AUTO_TEST_CASE(a_dead_writer_and_its_successor_stay_separable) {
  auto first = make_writer(durable());
  first->start();
  submit(*first, 10);
  BOOST_TEST(first->flush(10s));
  // It dies here: the document it published last is its last word, and its last append
  // was cut mid-record.
  const std::string last_word = jsonl_test::read_file(first->books_file().value());
  first->close();
  std::ofstream(first->books_file().value(), std::ios::binary | std::ios::trunc) << last_word;
  const std::filesystem::path file = first->path().value();
  std::ofstream(file, std::ios::binary | std::ios::app) << R"({"session":"s","index":10,"te)";
  const std::uint64_t size_at_death = std::filesystem::file_size(file);

  auto second = make_writer(durable());
  second->start();
  BOOST_TEST_REQUIRE((second->path() == file));
  submit(*second, 5, 100);
  second->close();

  const json::value dead = document_of(*first);
  const json::value alive = document_of(*second);
  BOOST_TEST(dead.at("generation") != alive.at("generation"));
  BOOST_TEST(dead.at("closed") == false);
  BOOST_TEST(alive.at("closed") == true);
  const jsonl::FileCheck dead_check = only_check(directory.path(), dead);
  const jsonl::FileCheck alive_check = only_check(directory.path(), alive);
  BOOST_TEST(dead_check.records == 10u);
  BOOST_TEST(dead_check.bad_lines == 0u);
  BOOST_TEST(alive_check.records == 5u);
  BOOST_TEST(alive_check.bad_lines == 0u);
  BOOST_TEST(alive_check.start_offset == size_at_death);
  BOOST_TEST(alive_check.fragments_isolated == 1u);
  // The successor's first record starts on a line of its own.
  const std::vector<std::string> lines = jsonl_test::read_lines(file);
  BOOST_TEST_REQUIRE(lines.size() == 16u);
  BOOST_TEST(json::parse(lines[11]) == record(100));
}

BOOST_AUTO_TEST_CASE(a_failed_publication_keeps_the_previous_document_whole) {
  auto writer = make_writer(durable());
  writer->start();
  submit(*writer, 2);
  BOOST_TEST(writer->flush(10s));
  const std::string before = jsonl_test::read_file(writer->books_file().value());

  calls->fail_renames(true);
  submit(*writer, 1, 2);
  BOOST_TEST(writer->flush(10s));
  BOOST_TEST(jsonl_test::read_file(writer->books_file().value()) == before);
  BOOST_TEST(writer->stats().publication_errors == 1u);
  BOOST_TEST(log.at(jsonl::LogLevel::warning).size() == 1u);

  calls->fail_renames(false);
  writer->close();
  const json::value after = document_of(*writer);
  BOOST_TEST(after.at("errors").at("publication_errors") == 1);
  BOOST_TEST(count(after, "persisted") == 3u);
  BOOST_TEST(balances(after));
}

BOOST_AUTO_TEST_CASE(an_idle_writer_catches_its_document_up) {
  auto options = durable();
  options.durability.publish_interval = 300ms;
  auto writer = make_writer(std::move(options));
  writer->start();
  BOOST_TEST_REQUIRE(calls->await_publications(1));  // the first document, at start
  submit(*writer, 3);
  // Within the interval of the first document, the commit may not publish; the idle
  // worker does, one interval later, with no further submit or flush.
  BOOST_TEST_REQUIRE(calls->await_publications(2));
  const json::value document = document_of(*writer);
  BOOST_TEST(document.at("closed") == false);
  BOOST_TEST(count(document, "persisted") == 3u);
  BOOST_TEST(balances(document));
}

BOOST_AUTO_TEST_CASE(a_failed_publication_is_retried_while_the_writer_is_idle) {
  auto options = durable();
  options.durability.publish_interval = 100ms;
  auto writer = make_writer(std::move(options));
  writer->start();
  BOOST_TEST_REQUIRE(calls->await_publications(1));
  calls->fail_renames(true);
  submit(*writer, 3);
  BOOST_TEST_REQUIRE(eventually([&] { return writer->stats().publication_errors != 0; }));
  calls->fail_renames(false);
  BOOST_TEST_REQUIRE(calls->await_publications(2));
  const json::value document = document_of(*writer);
  BOOST_TEST(count(document, "persisted") == 3u);
  BOOST_TEST(document.at("errors").at("publication_errors").to_number<std::uint64_t>() >= 1u);
}

BOOST_AUTO_TEST_CASE(the_reconciler_credits_unpublished_bytes_to_no_one) {
  auto first = make_writer(durable());
  first->start();
  submit(*first, 5);
  BOOST_TEST(first->flush(10s));
  const std::string last_word = jsonl_test::read_file(first->books_file().value());
  // Two more persisted, never published: it dies before its next document.
  submit(*first, 2, 5);
  first->close();
  std::ofstream(first->books_file().value(), std::ios::binary | std::ios::trunc) << last_word;

  auto second = make_writer(durable());
  second->start();
  submit(*second, 2, 200);
  second->close();

  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST(reconciliation.generations.size() == 2u);
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST_REQUIRE(reconciliation.unaccounted.size() == 1u);
  const jsonl::UnaccountedBytes& unclaimed = reconciliation.unaccounted[0];
  BOOST_TEST(unclaimed.file == first->path()->filename().string());
  BOOST_TEST(unclaimed.unclaimed_bytes == line_of(5, "ok").size() + line_of(6, "ok").size());
  BOOST_TEST(unclaimed.whole_lines == 2u);
  BOOST_TEST(unclaimed.cut_lines == 0u);
}

BOOST_AUTO_TEST_CASE(files_deleted_by_retention_stay_in_the_books_marked_deleted) {
  auto options = durable();
  options.batch_size = 4;
  options.max_file_bytes = 10;  // each append a file of its own
  options.max_files = 1;
  auto writer = make_writer(std::move(options));
  submit(*writer, 12);  // before start: three appends
  writer->start();
  writer->close();

  const json::value document = document_of(*writer);
  BOOST_TEST(balances(document));
  BOOST_TEST(count(document, "persisted") == 12u);
  std::vector<bool> deleted;
  for (const json::value& file : document.at("files").as_array()) deleted.push_back(file.at("deleted").as_bool());
  BOOST_TEST(deleted == (std::vector<bool>{true, true, false}), boost::test_tools::per_element());
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
}

BOOST_AUTO_TEST_CASE(without_durability_there_are_no_books_and_no_fsync) {
  auto options = durable();
  options.durability.enabled = false;
  auto writer = make_writer(std::move(options));
  writer->start();
  submit(*writer, 3);
  writer->close();
  BOOST_TEST(!writer->books_file().has_value());
  BOOST_TEST(!std::filesystem::exists(directory.path() / "_writer"));
  BOOST_TEST(calls->data_fsyncs.load() == 0);
  BOOST_TEST(writer->stats().written == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
