// The writer's lifecycle: closing, waiting submits, and writers that never write.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <latch>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "writer_fixture.hpp"

namespace json = boost::json;
using jsonl::LogLevel;
using jsonl_test::accounting_holds;
using jsonl_test::Log;
using jsonl_test::test_options;

namespace {

json::value numbered(int i) { return json::object{{"n", i}}; }

// A record whose move into the queue can be held: it stands for a submit that close()
// catches between admitting its record and pushing it.
struct HeldRecord {
  struct Hold {
    std::latch moving{1};
    std::latch release{1};
  };
  HeldRecord() = default;
  explicit HeldRecord(int id, std::shared_ptr<Hold> hold = nullptr) : id(id), hold(std::move(hold)) {}
  HeldRecord(HeldRecord&& other) noexcept : id(other.id), hold(std::exchange(other.hold, nullptr)) {
    if (hold) {  // only the first move, the push, waits
      hold->moving.count_down();
      hold->release.wait();
      hold = nullptr;
    }
  }
  HeldRecord& operator=(HeldRecord&& other) noexcept = default;
  int id = 0;
  std::shared_ptr<Hold> hold;
};

class HeldRecordFormat : public jsonl::RecordFormat<HeldRecord> {
 public:
  bool append_line(HeldRecord& record, std::string& out) const override {
    out += "{\"id\":" + std::to_string(record.id) + "}\n";
    return false;
  }
  bool is_malformed(const std::exception&) const noexcept override { return false; }
};

// Calls submit_wait(record) on a thread of its own, storing its result in `accepted`,
// and returns once the call waits for room.
std::jthread waiting_submit(jsonl::JsonlRecordWriter<>& writer, json::value record, bool& accepted) {
  std::jthread producer([&writer, &accepted, record = std::move(record)]() mutable {
    accepted = writer.submit_wait(std::move(record));
  });
  while (writer.stats().waiting_for_room == 0) std::this_thread::yield();
  return producer;
}

// Calls close() on a thread of its own; `closed` tells when it has returned.
template <class Writer>
std::jthread close_in_background(Writer& writer, std::atomic<bool>& closed) {
  return std::jthread([&writer, &closed] {
    writer.close();
    closed = true;
  });
}

// Whether on_thread_start has run on the calling thread.
thread_local bool thread_started = false;

// The threads on_thread_start ran on, and whether each piece of work a writer's thread
// did (serializing, appending) came after it on that thread.
struct ThreadStarts {
  std::mutex mutex;
  std::vector<std::thread::id> threads;
  std::atomic<int> work_before_start{0};
  std::atomic<int> work{0};
  void note_work() {
    ++work;
    if (!thread_started) ++work_before_start;
  }
};

class StartNotingFormat : public jsonl::JsonLineFormat {
 public:
  explicit StartNotingFormat(std::shared_ptr<ThreadStarts> starts) : starts_(std::move(starts)) {}
  bool append_line(json::value& record, std::string& out) const override {
    starts_->note_work();
    return JsonLineFormat::append_line(record, out);
  }

 private:
  std::shared_ptr<ThreadStarts> starts_;
};

class StartNotingSink : public jsonl::FileSink {
 public:
  explicit StartNotingSink(std::shared_ptr<ThreadStarts> starts) : starts_(std::move(starts)) {}
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    starts_->note_work();
    FileSink::append(append, outcome);
  }

 private:
  std::shared_ptr<ThreadStarts> starts_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(lifecycle)

BOOST_AUTO_TEST_CASE(close_writes_every_queued_record_then_ignores_submit) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 8;
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  for (int i = 0; i < 500; ++i) BOOST_TEST(writer.submit(numbered(i)));
  writer.close();
  BOOST_TEST(jsonl_test::read_lines(*writer.path()).size() == 500u);
  BOOST_TEST(!writer.submit(numbered(500)));
  writer.close();
  const auto stats = writer.stats();
  BOOST_TEST(stats.written == 500u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::ignored) == 1u);
  BOOST_TEST(stats.submitted == 501u);
  BOOST_TEST(writer.dropped_records() == 0u);
  BOOST_TEST(accounting_holds(stats));
}

BOOST_AUTO_TEST_CASE(close_writes_a_record_admitted_before_it_whose_push_is_still_in_progress) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.queue_size = 1;  // the held record fills it: probes are refused, never pushed
  // Far beyond the yields below however slowly a loaded machine runs them, so that only a
  // drain that gave up on the held record lets close() return during them.
  options.shutdown_timeout = std::chrono::minutes(10);
  jsonl::JsonlRecordWriter<HeldRecord> writer(options, std::make_shared<HeldRecordFormat>());
  writer.start();
  auto hold = std::make_shared<HeldRecord::Hold>();
  std::jthread submitter([&] { BOOST_TEST(writer.submit(HeldRecord(1, hold))); });
  hold->moving.wait();  // admitted, and inside the push
  std::atomic<bool> closed = false;
  std::jthread closer = close_in_background(writer, closed);
  while (writer.stats().dropped(jsonl::DropReason::ignored) == 0) {  // a queue-full drop until close() stops accepting
    writer.submit(HeldRecord(2));
    std::this_thread::yield();
  }
  // close() must still be waiting for the held record. Not a synchronization: a drain
  // that gave up on it would let close() return during these yields; a correct one
  // passes however they are scheduled.
  for (int i = 0; i < 100'000 && !closed; ++i) std::this_thread::yield();
  BOOST_TEST(!closed);
  hold->release.count_down();
  closer.join();
  submitter.join();
  const auto stats = writer.stats();
  BOOST_TEST(stats.written == 1u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::abandoned) == 0u);
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == std::vector<std::string>{R"({"id":1})"});
  BOOST_TEST(accounting_holds(stats));
}

BOOST_AUTO_TEST_CASE(submit_wait_waits_for_room_instead_of_dropping) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.queue_size = 1;
  jsonl::JsonlRecordWriter<> writer(options);
  BOOST_TEST(writer.submit_wait(numbered(0)));
  bool accepted = false;
  // The queue is full and nothing drains it: the producer must be waiting, not dropping.
  std::jthread producer = waiting_submit(writer, numbered(1), accepted);
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::queue_full) == 0u);
  writer.start();
  producer.join();
  BOOST_TEST(accepted);
  writer.close();
  const std::vector<std::string> expected{R"({"n":0})", R"({"n":1})"};
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == expected, boost::test_tools::per_element());
  BOOST_TEST(writer.dropped_records() == 0u);
  BOOST_TEST(writer.stats().waiting_for_room == 0u);
}

BOOST_AUTO_TEST_CASE(close_wakes_a_waiting_submit_which_is_then_ignored) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.queue_size = 1;
  jsonl::JsonlRecordWriter<> writer(options);
  BOOST_TEST(writer.submit(numbered(0)));
  bool accepted = true;
  std::jthread producer = waiting_submit(writer, numbered(1), accepted);
  writer.close();
  producer.join();
  BOOST_TEST(!accepted);
  const auto stats = writer.stats();
  BOOST_TEST(stats.dropped(jsonl::DropReason::ignored) == 1u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::abandoned) == 1u);  // queued, never started
  BOOST_TEST(accounting_holds(stats));
}

BOOST_AUTO_TEST_CASE(close_wakes_a_waiting_submit_at_once_while_a_write_is_stuck) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.queue_size = 1;
  options.batch_size = 1;
  auto gates = std::make_shared<jsonl_test::StuckSink::Gates>();
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<jsonl::JsonLineFormat>(),
                                    std::make_shared<jsonl_test::StuckSink>(gates));
  writer.start();
  BOOST_TEST(writer.submit(numbered(0)));
  gates->entered.wait();  // record 0 is in a write that does not return
  BOOST_TEST(writer.submit(numbered(1)));
  while (writer.stats().queue_depth != 0) std::this_thread::yield();  // the drain holds 1
  BOOST_TEST(writer.submit(numbered(2)));  // fills the queue
  bool accepted = true;
  std::jthread producer = waiting_submit(writer, numbered(3), accepted);
  std::atomic<bool> closed = false;
  std::jthread closer = close_in_background(writer, closed);
  producer.join();  // woken by close(), not by the shutdown timeout
  BOOST_TEST(!accepted);
  BOOST_TEST(!closed);  // close() still waits for the stuck write
  gates->release.count_down();
  closer.join();
  const auto stats = writer.stats();
  BOOST_TEST(stats.written == 3u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::ignored) == 1u);
  BOOST_TEST(accounting_holds(stats));
}

BOOST_AUTO_TEST_CASE(writer_without_output_directory_does_nothing) {
  const auto threads = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                         std::filesystem::directory_iterator{});
  };
  Log log;
  jsonl::WriterOptions options{.log_sink = log.sink()};
  jsonl::JsonlRecordWriter<> writer(options);
  const auto before = threads();
  writer.start();
  BOOST_TEST(threads() == before);
  BOOST_TEST(!writer.submit(numbered(1)));
  BOOST_TEST(!writer.path().has_value());
  writer.close();
  BOOST_TEST(log.entries().empty());
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::ignored) == 1u);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(output_directory_that_cannot_be_created_disables_the_writer) {
  jsonl_test::ScratchDirectory directory;
  const auto blocker = directory.path() / "a-file";
  { std::ofstream(blocker) << "not a directory"; }
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(blocker / "sub", log));
  BOOST_TEST(writer.submit(numbered(1)));
  writer.start();
  writer.start();
  const auto errors = log.at(LogLevel::error);
  BOOST_REQUIRE_EQUAL(errors.size(), 1u);
  BOOST_TEST(jsonl_test::contains(errors[0], "Disabling test JSONL output: "));
  BOOST_TEST(jsonl_test::contains(errors[0], "sub"));
  BOOST_TEST(!writer.path().has_value());
  BOOST_TEST(!writer.submit(numbered(2)));
  writer.close();
  const auto stats = writer.stats();
  BOOST_TEST(stats.dropped(jsonl::DropReason::abandoned) == 1u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::ignored) == 1u);
  BOOST_TEST(accounting_holds(stats));
  BOOST_TEST(log.entries().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_linger_under_one_millisecond_is_rejected) {
  jsonl::WriterOptions options{.output_dir = "/tmp"};
  options.linger = std::chrono::milliseconds(0);
  BOOST_CHECK_THROW(jsonl::JsonlRecordWriter<>{options}, std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(stem_that_could_escape_the_directory_is_rejected) {
  for (const std::string stem : {std::string(), std::string("."), std::string(".."),
                                 std::string("a/b"), std::string("a\0b", 3)}) {
    jsonl::WriterOptions options{.output_dir = "/tmp", .file_stem = stem};
    BOOST_CHECK_THROW(jsonl::JsonlRecordWriter<>{options}, std::invalid_argument);
  }
}

BOOST_AUTO_TEST_CASE(on_thread_start_runs_first_on_each_thread_the_writer_starts) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto starts = std::make_shared<ThreadStarts>();
  auto options = test_options(directory.path(), log);
  options.durability.enabled = true;
  options.on_thread_start = [starts] {
    thread_started = true;
    const std::lock_guard lock(starts->mutex);
    starts->threads.push_back(std::this_thread::get_id());
  };
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<StartNotingFormat>(starts),
                                    std::make_shared<StartNotingSink>(starts));
  writer.start();
  for (int i = 0; i < 10; ++i) writer.submit(numbered(i));
  writer.close();
  BOOST_TEST(writer.stats().written == 10u);
  BOOST_TEST(starts->work.load() > 0);
  BOOST_TEST(starts->work_before_start.load() == 0);
  // The drain, the write worker and the closing publication (which may reuse the id of
  // one that ended): three starts, none on the caller's thread.
  const std::vector<std::thread::id> threads = starts->threads;
  BOOST_TEST(threads.size() == 3u);
  BOOST_TEST(std::count(threads.begin(), threads.end(), std::this_thread::get_id()) == 0);
  BOOST_TEST(!thread_started);
}

BOOST_AUTO_TEST_CASE(an_on_thread_start_that_throws_is_logged_and_the_thread_goes_on) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.on_thread_start = [] { throw std::runtime_error("no such core"); };
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  for (int i = 0; i < 10; ++i) writer.submit(numbered(i));
  writer.close();
  BOOST_TEST(writer.stats().written == 10u);
  const auto warnings = log.at(LogLevel::warning);
  BOOST_REQUIRE_EQUAL(warnings.size(), 2u);  // the drain's and the write worker's
  for (const auto& warning : warnings) {
    BOOST_TEST(jsonl_test::contains(warning, "on_thread_start of a test JSONL writer thread threw "));
    BOOST_TEST(jsonl_test::contains(warning, "no such core"));
  }
}

BOOST_AUTO_TEST_SUITE_END()
