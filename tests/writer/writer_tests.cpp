// The writer's behaviours, one case each.
#define BOOST_TEST_MODULE writer
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <cmath>
#include <filesystem>
#include <latch>
#include <limits>
#include <memory>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "writer_fixture.hpp"

namespace json = boost::json;
using jsonl::LogLevel;
using namespace std::chrono_literals;

namespace {

using jsonl_test::accounting_holds;
using jsonl_test::Log;
using jsonl_test::test_options;

// The default sink, recording how many lines each append carried.
class RecordingSink : public jsonl::FileSink {
 public:
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    FileSink::append(append, outcome);
    const std::lock_guard lock(mutex_);
    sizes_.push_back(append.records);
    appended_.notify_all();
  }
  std::vector<std::size_t> sizes() const {
    const std::lock_guard lock(mutex_);
    return sizes_;
  }
  void wait_for_appends(std::size_t count) const {
    std::unique_lock lock(mutex_);
    appended_.wait(lock, [&] { return sizes_.size() >= count; });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable appended_;
  mutable std::vector<std::size_t> sizes_;
};

// A sink that throws `Error` for the appends numbered in `failing` (from 0).
template <class Error>
class FailingSink : public jsonl::FileSink {
 public:
  explicit FailingSink(std::vector<std::size_t> failing) : failing_(std::move(failing)) {}
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    std::size_t index;
    {
      const std::lock_guard lock(mutex_);
      index = calls_++;
    }
    if (failing_.empty() || std::find(failing_.begin(), failing_.end(), index) != failing_.end()) {
      if constexpr (std::is_same_v<Error, std::system_error>) {
        throw std::system_error(EIO, std::generic_category(), "append refused");
      } else {
        throw Error("disk gremlin");
      }
    }
    FileSink::append(append, outcome);
  }

 private:
  std::vector<std::size_t> failing_;  // empty: every append fails
  mutable std::mutex mutex_;
  mutable std::size_t calls_ = 0;
};

json::value numbered(int i) { return json::object{{"n", i}}; }

// Lines as usual, but the first record's waits until `release`, after counting down
// `entered`: a drain busy serializing.
class HeldFirstFormat : public jsonl::JsonLineFormat {
 public:
  bool append_line(json::value& record, std::string& out) const override {
    if (!held_.exchange(true)) {
      entered.count_down();
      release.wait();
    }
    return JsonLineFormat::append_line(record, out);
  }
  mutable std::latch entered{1};
  mutable std::latch release{1};

 private:
  mutable std::atomic<bool> held_{false};
};

}  // namespace

BOOST_AUTO_TEST_SUITE(writer)

BOOST_AUTO_TEST_CASE(records_become_one_compact_line_each_in_submission_order) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path() / "nested" / "out", log));
  writer.start();
  const auto file = writer.path();
  BOOST_REQUIRE(file.has_value());
  writer.start();
  BOOST_TEST((writer.path() == file));

  const std::regex name(R"(test-[^/]+-[0-9]+-[0-9]{8}T[0-9]{6}Z\.jsonl)");
  BOOST_TEST(std::regex_match(file->filename().string(), name), file->filename());
  BOOST_TEST(file->parent_path() == directory.path() / "nested" / "out");

  std::vector<std::string> expected;
  for (int i = 0; i < 200; ++i) {
    const std::string n = std::to_string(i);
    expected.push_back(R"({"i":)" + n + R"(,"name":"r)" + n + R"(","x":0.5})");
    BOOST_TEST(writer.submit(json::object{{"i", i}, {"name", "r" + n}, {"x", 0.5}}));
  }
  writer.close();
  BOOST_TEST(jsonl_test::read_lines(*file) == expected, boost::test_tools::per_element());
  const auto stats = writer.stats();
  BOOST_TEST(stats.written == 200u);
  BOOST_TEST(stats.lines_written == 200u);
  BOOST_TEST(stats.bytes_written == std::filesystem::file_size(*file));
  BOOST_TEST(stats.last_append.has_value());
  BOOST_TEST(accounting_holds(stats));
  BOOST_TEST(log.entries().empty());
}

BOOST_AUTO_TEST_CASE(json_null_is_a_record_not_a_stop_marker) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log));
  writer.start();
  BOOST_TEST(writer.submit(numbered(1)));
  BOOST_TEST(writer.submit(nullptr));
  BOOST_TEST(writer.submit(numbered(2)));
  writer.close();
  const std::vector<std::string> expected{R"({"n":1})", "null", R"({"n":2})"};
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(batches_hold_at_most_batch_size_records) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 4;
  auto sink = std::make_shared<RecordingSink>();
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<jsonl::JsonLineFormat>(), sink);
  for (int i = 0; i < 10; ++i) BOOST_TEST(writer.submit(numbered(i)));
  BOOST_TEST(writer.stats().queue_depth == 10u);
  writer.start();
  writer.close();
  const std::vector<std::size_t> expected{4, 4, 2};
  BOOST_TEST(sink->sizes() == expected, boost::test_tools::per_element());
  BOOST_TEST(writer.stats().appends == 3u);
  const auto lines = jsonl_test::read_lines(*writer.path());
  BOOST_REQUIRE_EQUAL(lines.size(), 10u);
  for (int i = 0; i < 10; ++i) BOOST_TEST(lines[i] == jsonl::to_json_text(numbered(i)));
}

BOOST_AUTO_TEST_CASE(full_queue_drops_the_newest_counts_it_and_logs_the_first_drop_only) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.queue_size = 4;
  jsonl::JsonlRecordWriter<> writer(options);
  for (int i = 0; i < 4; ++i) BOOST_TEST(writer.submit(numbered(i)));
  for (int i = 4; i < 4 + 1500; ++i) BOOST_TEST(!writer.submit(numbered(i)));
  BOOST_TEST(writer.dropped_records() == 1500u);
  const std::vector<std::string> warnings{"Dropped 1 test records", "Dropped 1000 test records"};
  BOOST_TEST(log.at(LogLevel::warning) == warnings, boost::test_tools::per_element());

  writer.start();
  writer.close();
  const std::vector<std::string> kept{R"({"n":0})", R"({"n":1})", R"({"n":2})", R"({"n":3})"};
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == kept, boost::test_tools::per_element());
  const auto stats = writer.stats();
  BOOST_TEST(stats.dropped(jsonl::DropReason::queue_full) == 1500u);
  BOOST_TEST(stats.submitted == 1504u);
  BOOST_TEST(accounting_holds(stats));
}

BOOST_AUTO_TEST_CASE(records_the_drain_holds_count_against_the_queue_size) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.queue_size = 4;
  options.batch_size = 1;
  auto format = std::make_shared<HeldFirstFormat>();
  jsonl::JsonlRecordWriter<> writer(options, format);
  writer.start();
  BOOST_TEST(writer.submit(numbered(0)));
  format->entered.wait();  // the drain holds record 0, serializing it
  for (int i = 1; i < 4; ++i) BOOST_TEST(writer.submit(numbered(i)));
  BOOST_TEST(!writer.submit(numbered(4)));
  BOOST_TEST(writer.stats().queue_depth == 4u);
  format->release.count_down();
  writer.close();
  BOOST_TEST(jsonl_test::read_lines(*writer.path()).size() == 4u);
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::queue_full) == 1u);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(record_json_cannot_represent_is_dropped_alone_and_logged_once) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log));
  writer.submit(numbered(1));
  writer.submit(json::object{{"latency", std::numeric_limits<double>::quiet_NaN()}});
  writer.submit(numbered(2));
  writer.start();
  writer.close();
  const std::vector<std::string> expected{R"({"n":1})", R"({"n":2})"};
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == expected, boost::test_tools::per_element());
  const auto warnings = log.at(LogLevel::warning);
  BOOST_REQUIRE_EQUAL(warnings.size(), 1u);
  BOOST_TEST(warnings[0] ==
             "Dropped malformed test record: Out of range float values are not JSON compliant: nan");
  BOOST_TEST(log.at(LogLevel::error).empty());
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::malformed) == 1u);
  BOOST_TEST(writer.dropped_records() == 1u);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(invalid_utf8_costs_one_character_not_the_record) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log));
  writer.submit(json::object{{"text", "ok\xff!"}});
  writer.submit(json::object{{"text", "fine"}});
  writer.start();
  writer.close();
  const std::vector<std::string> expected{R"({"text":"ok\ufffd!"})", R"({"text":"fine"})"};
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == expected, boost::test_tools::per_element());
  BOOST_TEST(writer.stats().sanitized == 1u);
  BOOST_TEST(writer.stats().written == 2u);
  const std::vector<std::string> warnings{"Sanitized 1 test records carrying unencodable text"};
  BOOST_TEST(log.at(LogLevel::warning) == warnings, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(unexpected_write_failure_costs_one_batch_not_the_drain) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 2;
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<jsonl::JsonLineFormat>(),
                                    std::make_shared<FailingSink<std::runtime_error>>(
                                        std::vector<std::size_t>{0}));
  for (int i = 0; i < 6; ++i) writer.submit(numbered(i));
  writer.start();
  writer.close();
  const std::vector<std::string> expected{R"({"n":2})", R"({"n":3})", R"({"n":4})", R"({"n":5})"};
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == expected, boost::test_tools::per_element());
  const auto errors = log.at(LogLevel::error);
  BOOST_REQUIRE_EQUAL(errors.size(), 1u);
  BOOST_TEST(jsonl_test::contains(errors[0], "Unexpected error writing test JSONL"));
  BOOST_TEST(jsonl_test::contains(errors[0], "std::runtime_error: disk gremlin"));
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::unexpected_write) == 2u);
  BOOST_TEST(writer.dropped_records() == 2u);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(filesystem_refused_appends_drop_their_batches_and_warn_once_per_run) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 2;
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<jsonl::JsonLineFormat>(),
                                    std::make_shared<FailingSink<std::system_error>>(
                                        std::vector<std::size_t>{0, 1}));
  for (int i = 0; i < 6; ++i) writer.submit(numbered(i));
  writer.start();
  writer.close();
  const std::vector<std::string> expected{R"({"n":4})", R"({"n":5})"};
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == expected, boost::test_tools::per_element());
  const auto warnings = log.at(LogLevel::warning);
  BOOST_REQUIRE_EQUAL(warnings.size(), 2u);
  BOOST_TEST(jsonl_test::contains(warnings[0], "Failed to write test JSONL: append refused"));
  BOOST_TEST(warnings[1] == "Resumed writing test JSONL after 4 records were lost");
  BOOST_TEST(log.at(LogLevel::error).empty());
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::write_error) == 4u);
  BOOST_TEST(writer.dropped_records() == 4u);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(planted_symlink_at_the_file_name_is_refused) {
  jsonl_test::ScratchDirectory directory;
  jsonl_test::ScratchDirectory elsewhere;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log));
  writer.start();
  const auto target = elsewhere.path() / "victim";
  std::filesystem::create_symlink(target, *writer.path());
  writer.submit(numbered(1));
  writer.close();
  BOOST_TEST(!std::filesystem::exists(target));
  BOOST_TEST(std::filesystem::is_symlink(*writer.path()));
  const auto warnings = log.at(LogLevel::warning);
  BOOST_REQUIRE_EQUAL(warnings.size(), 1u);
  BOOST_TEST(jsonl_test::contains(warnings[0], "Failed to write test JSONL"));
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::write_error) == 1u);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(submits_from_several_threads_lose_nothing) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.queue_size = 256;
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  constexpr int producers = 4;
  constexpr int per_producer = 20000;
  std::barrier go(producers);
  std::vector<std::jthread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      go.arrive_and_wait();
      for (int i = 0; i < per_producer; ++i) writer.submit(json::object{{"p", p}, {"i", i}});
    });
  }
  threads.clear();
  writer.close();
  const auto stats = writer.stats();
  BOOST_TEST(stats.submitted == std::uint64_t{producers * per_producer});
  BOOST_TEST(accounting_holds(stats));
  BOOST_TEST(stats.dropped(jsonl::DropReason::queue_full) == writer.dropped_records());
  const auto lines = jsonl_test::read_lines(*writer.path());
  BOOST_TEST(lines.size() == stats.written);
  std::vector<std::int64_t> last(producers, -1);
  bool in_order = true;
  for (const auto& line : lines) {
    const auto record = json::parse(line).as_object();
    const auto p = record.at("p").as_int64();
    const auto i = record.at("i").as_int64();
    in_order = in_order && i > last[p];
    last[p] = i;
  }
  BOOST_TEST(in_order);
}

BOOST_AUTO_TEST_CASE(file_removed_while_running_is_recreated_at_its_name) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto sink = std::make_shared<RecordingSink>();
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log),
                                    std::make_shared<jsonl::JsonLineFormat>(), sink);
  writer.submit(numbered(1));
  writer.start();
  const auto file = *writer.path();
  std::filesystem::path moved = directory.path() / "rotated.jsonl";
  sink->wait_for_appends(1);
  std::filesystem::rename(file, moved);
  writer.submit(numbered(2));
  writer.close();
  BOOST_TEST(jsonl_test::read_file(moved) == "{\"n\":1}\n");
  BOOST_TEST(jsonl_test::read_file(file) == "{\"n\":2}\n");
}

BOOST_AUTO_TEST_CASE(torn_last_line_is_terminated_before_the_next_batch) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log));
  writer.start();
  { std::ofstream(*writer.path(), std::ios::binary) << "{\"torn"; }
  writer.submit(numbered(1));
  writer.close();
  BOOST_TEST(jsonl_test::read_file(*writer.path()) == "{\"torn\n{\"n\":1}\n");
  BOOST_TEST(writer.stats().lines_written == 2u);
  BOOST_TEST(writer.stats().written == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
