// The performance-metrics configuration: the reference's two writer cases, and each
// constant of the configuration observed through the writer.
#define BOOST_TEST_MODULE perf_metrics
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <regex>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "test_support.hpp"

import jsonl.perf_metrics;

namespace json = boost::json;
using jsonl::LogLevel;
using namespace std::chrono_literals;

namespace {

using Log = jsonl_test::LogRecord<LogLevel>;

json::value raw_record(int id) {
  return json::object{{"request_id", std::to_string(id)},
                      {"status", "complete"},
                      {"phases", json::object{{"server", json::object{{"timing_metrics",
                                                                       json::object{{"arrival_time", 1.5}}}}}}}};
}

std::string shaped_line(int id) {
  return R"({"request_id":)" + std::to_string(id) +
         R"(,"perf_metrics":{"timing_metrics":{"arrival_time":1.5}},"status":"complete"})";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(perf_metrics_writer)

BOOST_AUTO_TEST_CASE(record_without_the_phases_the_schema_needs_is_dropped_as_malformed) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::PerfMetricsJsonlWriter writer(directory.path(), "server", log.sink());
  writer.start();
  writer.submit(json::object{{"request_id", "1"}, {"status", "complete"}, {"phases", json::object{}}});
  writer.submit(raw_record(2));
  writer.close();
  const std::vector<std::string> warnings{"Dropped malformed performance metrics record: 'server'"};
  BOOST_TEST(log.at(LogLevel::warning) == warnings, boost::test_tools::per_element());
  BOOST_TEST(log.at(LogLevel::error).empty());
  BOOST_TEST(writer.dropped_records() == 1u);
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == std::vector<std::string>{shaped_line(2)},
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(sixty_five_queued_records_are_appended_as_64_plus_1) {
  for (const int records : {64, 65}) {
    jsonl_test::ScratchDirectory directory;
    Log log;
    jsonl::PerfMetricsJsonlWriter writer(directory.path(), "server", log.sink());
    for (int i = 0; i < records; ++i) writer.submit(raw_record(i));
    writer.start();
    writer.close();
    BOOST_TEST(writer.stats().written == std::uint64_t(records));
    BOOST_TEST(writer.stats().appends == (records == 64 ? 1u : 2u), records << " records");
  }
}

BOOST_AUTO_TEST_CASE(records_are_written_shaped_in_files_named_for_the_server_kind) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::PerfMetricsJsonlWriter writer(directory.path(), "disagg_server", log.sink());
  writer.start();
  const std::regex name(R"(perf_metrics-disagg_server-[^/]+-[0-9]+-[0-9]{8}T[0-9]{6}Z\.jsonl)");
  BOOST_TEST(std::regex_match(writer.path()->filename().string(), name), writer.path()->filename());
  writer.submit(raw_record(7));
  writer.close();
  BOOST_TEST(jsonl_test::read_file(*writer.path()) == shaped_line(7) + "\n");
}

BOOST_AUTO_TEST_CASE(queue_holds_1024_records_and_log_lines_name_performance_metrics) {
  Log log;
  jsonl_test::ScratchDirectory directory;
  jsonl::PerfMetricsJsonlWriter writer(directory.path(), "server", log.sink());
  for (int i = 0; i < 1025; ++i) writer.submit(raw_record(i));
  BOOST_TEST(writer.stats().queue_depth == 1024u);
  const std::vector<std::string> warnings{"Dropped 1 performance metrics records"};
  BOOST_TEST(log.at(LogLevel::warning) == warnings, boost::test_tools::per_element());
  writer.close();
}

BOOST_AUTO_TEST_CASE(options_carry_the_configuration_constants) {
  const auto options = jsonl::perf_metrics_options("/tmp/x", "server");
  BOOST_TEST(options.file_stem == "perf_metrics-server");
  BOOST_TEST(options.subject == "performance metrics");
  BOOST_TEST(options.queue_size == 1024u);
  BOOST_TEST(options.batch_size == 64u);
  BOOST_TEST(options.shutdown_timeout.count() == 5000);
  BOOST_TEST(options.queue_size == jsonl::perf_metrics_queue_size);
  BOOST_TEST(options.batch_size == jsonl::perf_metrics_batch_size);
}

// A FIFO planted at the file's name, with nobody reading, is a write that never returns
// once the pipe is full: the shutdown timeout given in the options must bound close().
BOOST_AUTO_TEST_CASE(shutdown_timeout_from_the_options_bounds_close_on_a_stuck_write) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = jsonl::perf_metrics_options(directory.path(), "server", log.sink());
  options.shutdown_timeout = 100ms;
  jsonl::PerfMetricsJsonlWriter writer(options);
  writer.start();
  BOOST_REQUIRE(::mkfifo(writer.path()->c_str(), 0600) == 0);
  json::value big = raw_record(1);
  big.as_object()["status"] = std::string(256 * 1024, 'x');  // more than a pipe holds
  writer.submit(std::move(big));

  const auto began = std::chrono::steady_clock::now();
  writer.close();
  const auto took = std::chrono::steady_clock::now() - began;
  BOOST_TEST(took >= options.shutdown_timeout);
  BOOST_TEST(took < options.shutdown_timeout + 2s);
  BOOST_TEST(log.at(LogLevel::warning) ==
                 std::vector<std::string>{
                     "Timed out flushing performance metrics JSONL; dropping remaining records"},
             boost::test_tools::per_element());
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::abandoned) == 1u);

  // Drain the pipe so the abandoned write can finish and its thread end.
  const int fifo = ::open(writer.path()->c_str(), O_RDONLY);
  BOOST_REQUIRE(fifo >= 0);
  char buffer[65536];
  while (::read(fifo, buffer, sizeof buffer) > 0) {
  }
  ::close(fifo);
}

BOOST_AUTO_TEST_SUITE_END()
