// The recorder's own destination (jsonl_writers): what RecorderOptions asks of its two
// writers beyond the lines' bytes.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "recording.hpp"

import jsonl.request_trace;

using namespace recording_test;
using namespace std::chrono_literals;

namespace {

std::uint64_t written(const RecordingDestination& destination) {
  std::uint64_t lines = 0;
  for (const jsonl::WriterMetrics& writer : destination.writer_metrics()) lines += writer.stats.written;
  return lines;
}

// Hands `destination` a request line made at `at` and waits (ten seconds at most) until
// it is written, so that the writer's clock reads the time of its append.
bool trace_written(RecordingDestination& destination, std::chrono::system_clock::time_point at) {
  const std::uint64_t before = written(destination);
  RequestLine line{.trace_id = "trace", .session = "session", .recorded_at = at, .route = "/v1/chat/completions",
                   .status = "accepted", .body = "{}"};
  if (!destination.trace(std::move(line))) return false;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (written(destination) == before) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// The hour buckets in a request-trace directory (its books' directory aside).
std::vector<std::string> hours_in(const std::filesystem::path& directory) {
  std::vector<std::string> hours;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.path().filename() != "_writer") hours.push_back(entry.path().filename().string());
  }
  return hours;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(jsonl_writers)

BOOST_AUTO_TEST_CASE(request_trace_retention_deletes_an_hours_traces_and_their_directory_once_idle_that_long) {
  jsonl_test::ScratchDirectory directory;
  jsonl_test::ManualClock clock;
  RecorderOptions options;
  options.output_dir = directory.path();
  options.hold_for = 0ms;
  options.request_trace_retention = 1h;
  options.writer_clock = clock.function();
  const auto writers = jsonl::recording::jsonl_writers(options);
  BOOST_TEST_REQUIRE(writers->start());
  const auto first_hour = clock.function()();
  BOOST_TEST_REQUIRE(trace_written(*writers, first_hour));
  clock.advance(1h);
  BOOST_TEST_REQUIRE(trace_written(*writers, first_hour + 1h));
  writers->close();

  const std::vector<std::string> expected{jsonl::hour_bucket(first_hour + 1h)};
  BOOST_TEST(hours_in(directory.path() / "request_trace") == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
