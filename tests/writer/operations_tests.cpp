// What a writer running for weeks beside a server needs: recovery from a lost directory
// or a full disk, rotation with retention, and flush. One case per behaviour.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <latch>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "writer_fixture.hpp"

namespace json = boost::json;
using jsonl::LogLevel;
using jsonl_test::accounting_holds;
using jsonl_test::Log;
using jsonl_test::test_options;
using namespace std::chrono_literals;

namespace {

json::value numbered(int i) { return json::object{{"n", i}}; }

// Generous: a flush that times out fails its test rather than hanging it.
constexpr auto flush_timeout = std::chrono::milliseconds(60'000);

// The default sink, refusing appends with ENOSPC while `full` is set: a disk that
// fills up and is cleaned.
class FullDiskSink : public jsonl::FileSink {
 public:
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    if (full) throw std::system_error(ENOSPC, std::generic_category(), "write " + outcome.file.string());
    FileSink::append(append, outcome);
  }
  mutable std::atomic<bool> full{false};
};

using jsonl_test::ManualClock;

// This writer's files in `directory`, oldest name first (names sort by time and suffix
// within this test's few files).
std::vector<std::filesystem::path> files_in(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.path().extension() == ".jsonl") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    const auto key = [](const std::filesystem::path& p) {
      std::string name = p.stem().string();
      // "...Z" sorts before "...Z-1", which sorts before "...Z-2".
      return name.back() == 'Z' ? name + "-0" : name;
    };
    return key(a) < key(b);
  });
  return files;
}

void submit_range(jsonl::JsonlRecordWriter<>& writer, int from, int to) {
  for (int i = from; i < to; ++i) BOOST_TEST_REQUIRE(writer.submit(numbered(i)));
}

// Submits records [from, to) and waits until they are written: a commit of their own.
void commit_range(jsonl::JsonlRecordWriter<>& writer, int from, int to) {
  submit_range(writer, from, to);
  BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
}

std::vector<std::string> numbered_lines(int from, int to) {
  std::vector<std::string> lines;
  for (int i = from; i < to; ++i) lines.push_back(jsonl::to_json_text(numbered(i)));
  return lines;
}

// The real calls, counting the opens of data files: how often a sink opened its files.
class CountedOpens : public jsonl::FileCalls {
 public:
  int open(const std::filesystem::path& file, int flags, mode_t mode) const override {
    if (file.extension() == ".jsonl") ++opens;
    return FileCalls::open(file, flags, mode);
  }
  mutable std::atomic<int> opens{0};
};

}  // namespace

BOOST_AUTO_TEST_SUITE(recovery)

BOOST_AUTO_TEST_CASE(a_file_written_commit_after_commit_is_opened_once) {
  jsonl_test::ScratchDirectory scratch;
  Log log;
  auto calls = std::make_shared<CountedOpens>();
  jsonl::JsonlRecordWriter<> writer(test_options(scratch.path(), log), std::make_shared<jsonl::JsonLineFormat>(),
                                    std::make_shared<jsonl::FileSink>(calls));
  writer.start();
  for (int commit = 0; commit < 5; ++commit) {
    commit_range(writer, commit * 3, commit * 3 + 3);
  }
  writer.close();
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == numbered_lines(0, 15), boost::test_tools::per_element());
  BOOST_TEST(calls->opens == 1);
}

BOOST_AUTO_TEST_CASE(a_closed_writer_holds_none_of_its_files_open) {
  jsonl_test::ScratchDirectory scratch;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(scratch.path(), log));
  writer.start();
  commit_range(writer, 0, 3);
  writer.close();
  const auto file = std::filesystem::canonical(*writer.path());
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code unreadable;  // the iterator's own descriptor, closed by now
    BOOST_TEST(std::filesystem::read_symlink(entry.path(), unreadable) != file);
  }
}

BOOST_AUTO_TEST_CASE(a_file_removed_between_commits_is_recreated_at_its_name) {
  jsonl_test::ScratchDirectory scratch;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(scratch.path(), log));
  writer.start();
  commit_range(writer, 0, 3);
  std::filesystem::remove(*writer.path());
  submit_range(writer, 3, 6);
  writer.close();
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == numbered_lines(3, 6), boost::test_tools::per_element());
  BOOST_TEST(writer.stats().written == 6u);
}

BOOST_AUTO_TEST_CASE(a_file_replaced_at_its_name_between_commits_gets_the_next_lines) {
  jsonl_test::ScratchDirectory scratch;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(scratch.path(), log));
  writer.start();
  commit_range(writer, 0, 3);
  const auto replacement = scratch.path() / "replacement";
  // As long as what the writer left, so that only the name, not the size, tells them apart.
  { std::ofstream(replacement, std::ios::binary) << "{\"other\":true}\n{\"cut-off"; }
  BOOST_TEST_REQUIRE(std::filesystem::file_size(replacement) == std::filesystem::file_size(*writer.path()));
  std::filesystem::rename(replacement, *writer.path());
  submit_range(writer, 3, 5);
  writer.close();
  const std::vector<std::string> expected{R"({"other":true})", R"({"cut-off)", R"({"n":3})", R"({"n":4})"};
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_symlink_planted_at_a_kept_files_name_is_refused) {
  jsonl_test::ScratchDirectory scratch;
  jsonl_test::ScratchDirectory elsewhere;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(scratch.path(), log));
  writer.start();
  commit_range(writer, 0, 2);
  const auto target = elsewhere.path() / "victim";
  std::filesystem::remove(*writer.path());
  std::filesystem::create_symlink(target, *writer.path());
  submit_range(writer, 2, 3);
  writer.close();
  BOOST_TEST(!std::filesystem::exists(target));
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::write_error) == 1u);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(an_append_after_the_directory_was_removed_recreates_it_and_loses_nothing) {
  jsonl_test::ScratchDirectory scratch;
  const auto directory = scratch.path() / "metrics" / "today";
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory, log));
  writer.start();
  submit_range(writer, 0, 10);
  BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
  std::filesystem::remove_all(scratch.path() / "metrics");
  submit_range(writer, 10, 20);
  writer.close();

  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == numbered_lines(10, 20), boost::test_tools::per_element());
  const auto stats = writer.stats();
  BOOST_TEST(stats.written == 20u);
  BOOST_TEST(stats.dropped() == 0u);
  BOOST_TEST(stats.directories_recreated == 1u);
  const std::vector<std::string> warnings{"Recreated the missing test JSONL directory '" + directory.string() + "'"};
  BOOST_TEST(log.at(LogLevel::warning) == warnings, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_append_after_the_directory_was_renamed_starts_the_file_again_at_its_name) {
  jsonl_test::ScratchDirectory scratch;
  const auto directory = scratch.path() / "out";
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory, log));
  writer.start();
  submit_range(writer, 0, 5);
  BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
  std::filesystem::rename(directory, scratch.path() / "archived");
  submit_range(writer, 5, 12);
  writer.close();

  const auto name = writer.path()->filename();
  BOOST_TEST(writer.path()->parent_path() == directory);
  BOOST_TEST(jsonl_test::read_lines(scratch.path() / "archived" / name) == numbered_lines(0, 5),
             boost::test_tools::per_element());
  BOOST_TEST(jsonl_test::read_lines(directory / name) == numbered_lines(5, 12), boost::test_tools::per_element());
  BOOST_TEST(writer.stats().written == 12u);
  BOOST_TEST(writer.stats().directories_recreated == 1u);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(a_directory_that_cannot_be_recreated_costs_the_batch_and_writing_resumes_once_it_can) {
  jsonl_test::ScratchDirectory scratch;
  const auto directory = scratch.path() / "out";
  Log log;
  auto options = test_options(directory, log);
  options.batch_size = 4;
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  submit_range(writer, 0, 4);
  BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
  std::filesystem::remove_all(directory);
  std::ofstream(directory) << "a file where the directory was";  // mkdir now fails
  submit_range(writer, 4, 8);
  BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
  std::filesystem::remove(directory);
  submit_range(writer, 8, 12);
  writer.close();

  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == numbered_lines(8, 12), boost::test_tools::per_element());
  const auto stats = writer.stats();
  BOOST_TEST(stats.dropped(jsonl::DropReason::write_error) == 4u);
  BOOST_TEST(stats.written == 8u);
  const auto warnings = log.at(LogLevel::warning);
  BOOST_REQUIRE_EQUAL(warnings.size(), 3u);
  BOOST_TEST(jsonl_test::contains(warnings[0], "Failed to write test JSONL: "));
  BOOST_TEST(warnings[1] == "Recreated the missing test JSONL directory '" + directory.string() + "'");
  BOOST_TEST(warnings[2] == "Resumed writing test JSONL after 4 records were lost");
  BOOST_TEST(accounting_holds(stats));
}

BOOST_AUTO_TEST_CASE(a_full_disk_costs_the_batches_it_refuses_warns_once_a_run_and_says_what_each_run_lost) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 5;
  auto sink = std::make_shared<FullDiskSink>();
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<jsonl::JsonLineFormat>(), sink);
  writer.start();
  const auto write = [&](int from, int to) {
    submit_range(writer, from, to);
    BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
  };
  write(0, 5);
  sink->full = true;
  write(5, 15);  // two batches refused: one run
  sink->full = false;
  write(15, 20);
  sink->full = true;
  write(20, 25);
  sink->full = false;
  write(25, 30);
  writer.close();

  std::vector<std::string> expected = numbered_lines(0, 5);
  for (auto lines : {numbered_lines(15, 20), numbered_lines(25, 30)}) expected.insert(expected.end(), lines.begin(), lines.end());
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == expected, boost::test_tools::per_element());
  const auto warnings = log.at(LogLevel::warning);
  BOOST_REQUIRE_EQUAL(warnings.size(), 4u);
  BOOST_TEST(jsonl_test::contains(warnings[0], "Failed to write test JSONL: write "));
  BOOST_TEST(jsonl_test::contains(warnings[0], "No space left on device"));
  BOOST_TEST(warnings[1] == "Resumed writing test JSONL after 10 records were lost");
  BOOST_TEST(jsonl_test::contains(warnings[2], "Failed to write test JSONL: write "));
  BOOST_TEST(warnings[3] == "Resumed writing test JSONL after 5 records were lost");
  const auto stats = writer.stats();
  BOOST_TEST(stats.dropped(jsonl::DropReason::write_error) == 15u);
  BOOST_TEST(stats.written == 15u);
  BOOST_TEST(writer.dropped_records() == 15u);
  BOOST_TEST(accounting_holds(stats));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(rotation)

BOOST_AUTO_TEST_CASE(without_limits_the_writer_keeps_one_file) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 1;
  ManualClock clock;
  options.clock = clock.function();
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  for (int i = 0; i < 20; ++i) {
    submit_range(writer, i, i + 1);
    BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
    clock.advance(24h);
  }
  writer.close();
  BOOST_TEST(files_in(directory.path()).size() == 1u);
  BOOST_TEST(writer.stats().files_started == 1u);
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == numbered_lines(0, 20), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_size_limit_starts_a_new_file_before_an_append_that_would_pass_it) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 3;
  const std::size_t line = jsonl::to_json_text(numbered(10)).size() + 1;  // every record here: 2 digits
  options.max_file_bytes = 7 * line;  // two batches of three fit, a third does not
  ManualClock clock;
  options.clock = clock.function();
  jsonl::JsonlRecordWriter<> writer(options);
  submit_range(writer, 10, 25);  // queued before start: five whole batches
  writer.start();
  writer.close();

  // The clock stood still: the later files take -1 and -2 in the same second.
  const auto files = files_in(directory.path());
  BOOST_REQUIRE_EQUAL(files.size(), 3u);
  const std::string stem = files[0].stem().string();
  BOOST_TEST(stem.back() == 'Z');
  BOOST_TEST(files[1].filename().string() == stem + "-1.jsonl");
  BOOST_TEST(files[2].filename().string() == stem + "-2.jsonl");
  BOOST_TEST(jsonl_test::read_lines(files[0]) == numbered_lines(10, 16), boost::test_tools::per_element());
  BOOST_TEST(jsonl_test::read_lines(files[1]) == numbered_lines(16, 22), boost::test_tools::per_element());
  BOOST_TEST(jsonl_test::read_lines(files[2]) == numbered_lines(22, 25), boost::test_tools::per_element());
  BOOST_TEST(*writer.path() == files[2]);
  BOOST_TEST(writer.stats().files_started == 3u);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(an_append_larger_than_the_size_limit_goes_whole_into_a_file_of_its_own) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 4;
  options.max_file_bytes = 10;
  jsonl::JsonlRecordWriter<> writer(options);
  submit_range(writer, 10, 18);  // queued before start: two whole batches
  writer.start();
  writer.close();
  const auto files = files_in(directory.path());
  BOOST_REQUIRE_EQUAL(files.size(), 2u);
  BOOST_TEST(jsonl_test::read_lines(files[0]) == numbered_lines(10, 14), boost::test_tools::per_element());
  BOOST_TEST(jsonl_test::read_lines(files[1]) == numbered_lines(14, 18), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_age_limit_starts_a_new_file_named_for_the_time_then) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.max_file_age = 1h;
  ManualClock clock;
  options.clock = clock.function();
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  const auto first = *writer.path();
  submit_range(writer, 0, 3);
  BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
  clock.advance(59min + 59s);
  submit_range(writer, 3, 6);
  BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
  BOOST_TEST(*writer.path() == first);
  clock.advance(1s);
  submit_range(writer, 6, 9);
  writer.close();

  const auto files = files_in(directory.path());
  BOOST_REQUIRE_EQUAL(files.size(), 2u);
  BOOST_TEST(files[0] == first);

  // 1'790'000'000 s is 2026-09-21T14:13:20Z; an hour on is 15:13:20.
  BOOST_TEST(jsonl_test::contains(first.filename().string(), "-20260921T141320Z.jsonl"));
  BOOST_TEST(jsonl_test::contains(files[1].filename().string(), "-20260921T151320Z.jsonl"));
  BOOST_TEST(jsonl_test::read_lines(files[0]) == numbered_lines(0, 6), boost::test_tools::per_element());
  BOOST_TEST(jsonl_test::read_lines(files[1]) == numbered_lines(6, 9), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(utc_text_spells_a_time_cut_to_the_microsecond_with_f_for_its_fraction) {
  // 1'790'000'000 s is 2026-09-21T14:13:20Z.
  const std::chrono::sys_seconds second{std::chrono::seconds(1'790'000'000)};
  const auto at = second + 59min + 39s + 7us + 999ns;
  BOOST_TEST(jsonl::utc_text(at, "%Y-%m-%dT%H:%M:%S.%fZ") == "2026-09-21T15:12:59.000007Z");
  BOOST_TEST(jsonl::utc_text(at, "%Y%m%dT%H%M%SZ") == "20260921T151259Z");
  BOOST_TEST(jsonl::utc_text(second + 46min + 39s + 999'999us + 999ns, "%Y-%m-%dT%H|%f|%f") ==
             "2026-09-21T14|999999|999999");
  BOOST_TEST(jsonl::utc_text(second, "%f") == "000000");
}

BOOST_AUTO_TEST_CASE(utc_text_spells_numeric_fields_as_strftime_does_and_leaves_it_the_rest) {
  std::mt19937_64 random(11);
  for (int i = 0; i < 2000; ++i) {
    // Any second from 1970 up to 2200.
    const auto seconds = static_cast<std::time_t>(random() % 7'258'118'400ULL);
    std::tm utc{};
    ::gmtime_r(&seconds, &utc);
    char expected[64];
    std::strftime(expected, sizeof expected, "%Y-%m-%dT%H:%M:%S %%", &utc);
    BOOST_TEST(jsonl::utc_text(std::chrono::system_clock::from_time_t(seconds), "%Y-%m-%dT%H:%M:%S %%") == expected);
  }
  // 1'790'000'000 s is 2026-09-21T14:13:20Z, a Monday.
  BOOST_TEST(jsonl::utc_text(std::chrono::system_clock::from_time_t(1'790'000'000), "%a %b %j") == "Mon Sep 264");
}

BOOST_AUTO_TEST_CASE(retention_deletes_the_oldest_of_this_writers_files_only) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 1;
  options.max_file_bytes = 1;  // every append after the first starts a file
  options.max_files = 2;
  const auto stranger = directory.path() / "test-otherhost-1-20200101T000000Z.jsonl";
  std::ofstream(stranger) << "{}\n";
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  for (int i = 0; i < 5; ++i) {
    submit_range(writer, i, i + 1);
    BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
  }
  writer.close();

  BOOST_TEST(std::filesystem::exists(stranger));
  std::vector<std::filesystem::path> ours;
  for (const auto& file : files_in(directory.path())) {
    if (file != stranger) ours.push_back(file);
  }
  BOOST_REQUIRE_EQUAL(ours.size(), 2u);
  BOOST_TEST(writer.stats().files_started == 5u);
  std::vector<std::string> kept;
  for (const auto& file : ours) {
    for (const auto& line : jsonl_test::read_lines(file)) kept.push_back(line);
  }
  std::sort(kept.begin(), kept.end());
  BOOST_TEST(kept == numbered_lines(3, 5), boost::test_tools::per_element());
  BOOST_TEST(log.at(LogLevel::warning).empty());
}

BOOST_AUTO_TEST_CASE(a_rotation_request_starts_a_new_file_at_the_next_append) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.rotation_requests = std::make_shared<jsonl::RotationRequests>();
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  commit_range(writer, 0, 3);
  options.rotation_requests->request();
  options.rotation_requests->request();  // two before the next append: one rotation
  commit_range(writer, 3, 6);
  commit_range(writer, 6, 9);
  writer.close();

  const auto files = files_in(directory.path());
  BOOST_REQUIRE_EQUAL(files.size(), 2u);
  BOOST_TEST(jsonl_test::read_lines(files[0]) == numbered_lines(0, 3), boost::test_tools::per_element());
  BOOST_TEST(jsonl_test::read_lines(files[1]) == numbered_lines(3, 9), boost::test_tools::per_element());
  BOOST_TEST(*writer.path() == files[1]);
  BOOST_TEST(writer.stats().files_started == 2u);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(a_rotation_request_keeps_a_file_that_holds_nothing_yet) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.rotation_requests = std::make_shared<jsonl::RotationRequests>();
  options.rotation_requests->request();  // before start: the first file is new anyway
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  const auto first = *writer.path();
  options.rotation_requests->request();
  commit_range(writer, 0, 3);
  writer.close();

  BOOST_TEST(files_in(directory.path()) == std::vector<std::filesystem::path>{first}, boost::test_tools::per_element());
  BOOST_TEST(jsonl_test::read_lines(first) == numbered_lines(0, 3), boost::test_tools::per_element());
  BOOST_TEST(writer.stats().files_started == 1u);
}

BOOST_AUTO_TEST_CASE(one_rotation_request_rotates_every_writer_that_shares_it) {
  jsonl_test::ScratchDirectory first_directory;
  jsonl_test::ScratchDirectory second_directory;
  Log log;
  const auto requests = std::make_shared<jsonl::RotationRequests>();
  auto first_options = test_options(first_directory.path(), log);
  first_options.rotation_requests = requests;
  auto second_options = test_options(second_directory.path(), log);
  second_options.rotation_requests = requests;
  jsonl::JsonlRecordWriter<> first(first_options);
  jsonl::JsonlRecordWriter<> second(second_options);
  first.start();
  second.start();
  commit_range(first, 0, 2);
  commit_range(second, 0, 2);
  requests->request();
  commit_range(first, 2, 4);
  commit_range(second, 2, 4);
  first.close();
  second.close();

  for (const auto* directory : {&first_directory, &second_directory}) {
    const auto files = files_in(directory->path());
    BOOST_REQUIRE_EQUAL(files.size(), 2u);
    BOOST_TEST(jsonl_test::read_lines(files[0]) == numbered_lines(0, 2), boost::test_tools::per_element());
    BOOST_TEST(jsonl_test::read_lines(files[1]) == numbered_lines(2, 4), boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(retention_counts_the_files_requested_rotations_start) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.rotation_requests = std::make_shared<jsonl::RotationRequests>();
  options.max_files = 2;
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  for (int i = 0; i < 4; ++i) {
    commit_range(writer, i, i + 1);
    options.rotation_requests->request();
  }
  writer.close();

  const auto files = files_in(directory.path());
  BOOST_REQUIRE_EQUAL(files.size(), 2u);
  BOOST_TEST(jsonl_test::read_lines(files[0]) == numbered_lines(2, 3), boost::test_tools::per_element());
  BOOST_TEST(jsonl_test::read_lines(files[1]) == numbered_lines(3, 4), boost::test_tools::per_element());
  BOOST_TEST(writer.stats().files_started == 4u);
}

BOOST_AUTO_TEST_CASE(unusable_rotation_limits_are_refused_at_construction) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto zero_bytes = test_options(directory.path(), log);
  zero_bytes.max_file_bytes = 0;
  BOOST_CHECK_THROW(jsonl::JsonlRecordWriter<>{zero_bytes}, std::invalid_argument);
  auto zero_age = test_options(directory.path(), log);
  zero_age.max_file_age = 0s;
  BOOST_CHECK_THROW(jsonl::JsonlRecordWriter<>{zero_age}, std::invalid_argument);
  auto no_files = test_options(directory.path(), log);
  no_files.max_files = 0;
  BOOST_CHECK_THROW(jsonl::JsonlRecordWriter<>{no_files}, std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(flush)

BOOST_AUTO_TEST_CASE(flush_returns_once_every_record_accepted_before_it_is_written) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 7;
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  for (int round = 0; round < 20; ++round) {
    submit_range(writer, round * 50, round * 50 + 50);
    BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
    BOOST_TEST_REQUIRE(writer.stats().written == std::uint64_t(round * 50 + 50));
    BOOST_TEST_REQUIRE(jsonl_test::read_lines(*writer.path()).size() == std::size_t(round * 50 + 50));
  }
  writer.close();
}

BOOST_AUTO_TEST_CASE(flush_does_not_wait_out_the_drains_linger) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.linger = std::chrono::hours(1);
  jsonl::JsonlRecordWriter<> writer(options);
  writer.start();
  for (int round = 0; round < 3; ++round) {
    submit_range(writer, round * 10, round * 10 + 10);
    BOOST_TEST_REQUIRE(writer.flush(flush_timeout));
    BOOST_TEST_REQUIRE(jsonl_test::read_lines(*writer.path()).size() == std::size_t(round * 10 + 10));
  }
  writer.close();
}

BOOST_AUTO_TEST_CASE(flush_counts_a_dropped_record_as_done) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log));
  writer.start();
  BOOST_TEST(writer.submit(json::value(std::numeric_limits<double>::quiet_NaN())));
  BOOST_TEST(writer.flush(flush_timeout));
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::malformed) == 1u);
  writer.close();
}

BOOST_AUTO_TEST_CASE(flush_times_out_behind_a_stuck_append_says_so_and_never_blocks_submit) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto gates = std::make_shared<jsonl_test::StuckSink::Gates>();
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log), std::make_shared<jsonl::JsonLineFormat>(),
                                    std::make_shared<jsonl_test::StuckSink>(gates));
  writer.start();
  submit_range(writer, 0, 3);
  gates->entered.wait();
  BOOST_TEST(!writer.flush(50ms));
  std::atomic<bool> flushed{false};
  std::jthread flusher([&] { flushed = writer.flush(flush_timeout); });
  submit_range(writer, 3, 6);  // returns while the flush waits
  gates->release.count_down();
  flusher.join();
  BOOST_TEST(flushed.load());
  BOOST_TEST(writer.stats().written >= 3u);
  writer.close();
  BOOST_TEST(writer.stats().written == 6u);
}

BOOST_AUTO_TEST_CASE(flushes_beside_each_other_and_close_all_return_done) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log));
  writer.start();
  constexpr int flushers = 4;
  std::latch go(flushers + 1);
  std::atomic<int> done{0};
  std::vector<std::jthread> threads;
  for (int t = 0; t < flushers; ++t) {
    threads.emplace_back([&, t] {
      go.arrive_and_wait();
      for (int i = 0; i < 100; ++i) {
        writer.submit(numbered(t * 1000 + i));
        if (i % 10 == 9 && writer.flush(flush_timeout)) done.fetch_add(1);
      }
    });
  }
  go.arrive_and_wait();
  writer.close();
  threads.clear();
  BOOST_TEST(done.load() == flushers * 10);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(flush_waits_for_start_and_returns_at_once_when_nothing_can_come) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log));
  BOOST_TEST(writer.flush(0ms));  // nothing accepted yet
  submit_range(writer, 0, 2);
  BOOST_TEST(!writer.flush(20ms));  // not started: nothing is written
  writer.start();
  BOOST_TEST(writer.flush(flush_timeout));
  BOOST_TEST(writer.stats().written == 2u);
  writer.close();
  BOOST_TEST(writer.flush(0ms));

  jsonl::JsonlRecordWriter<> inert({.output_dir = std::nullopt, .log_sink = log.sink()});
  inert.start();
  BOOST_TEST(!inert.submit(numbered(1)));
  BOOST_TEST(inert.flush(0ms));
}

BOOST_AUTO_TEST_SUITE_END()
