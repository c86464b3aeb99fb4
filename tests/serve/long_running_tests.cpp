// What an operator running jsonl-perf serve for weeks does to it from outside: rotation
// and retention of the perf-metrics file from the command line, and SIGHUP to rotate
// now. A real server process on loopback; the writers' counters in /metrics and the
// server's log are the seams a case waits on.
#define BOOST_TEST_MODULE long_running
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "served.hpp"

namespace {

using namespace serve_test;
using Clock = std::chrono::steady_clock;

constexpr auto patience = std::chrono::seconds(30);
const std::string perf_written = R"(jsonl_records_written_total{subject="performance metrics",server_kind="server"})";
const std::string perf_files_started =
    R"(jsonl_files_started_total{subject="performance metrics",server_kind="server"})";

// Posts a completed request and waits until its perf record is written: the `count`-th.
void serve_one(Served& server, int count) {
  BOOST_REQUIRE(server.post("/v1/chat/completions", chat_request(false)).result_int() == 200);
  const auto deadline = Clock::now() + patience;
  while (server.metric(perf_written) < count) BOOST_REQUIRE(Clock::now() < deadline);
}

// Sends SIGHUP and waits until the server has said it took the `count`-th.
void hang_up(Served& server, std::size_t count) {
  server.signal(SIGHUP);
  const auto deadline = Clock::now() + patience;
  const std::string said = "SIGHUP: the perf-metrics file rotates at its next line";
  const auto taken = [&] {
    const std::string log = server.log();
    std::size_t found = 0;
    for (std::size_t at = log.find(said); at != std::string::npos; at = log.find(said, at + 1)) ++found;
    return found;
  };
  while (taken() < count) BOOST_REQUIRE(Clock::now() < deadline);
}

// The perf-metrics files the server left, each with its lines.
std::vector<std::vector<std::string>> perf_files(const Served& server) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(server.dir() / "perf_metrics")) {
    if (entry.path().extension() == ".jsonl") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::vector<std::string>> result;
  for (const auto& file : files) result.push_back(jsonl_test::read_lines(file));
  return result;
}

}  // namespace

BOOST_AUTO_TEST_CASE(sighup_starts_a_new_perf_metrics_file_at_the_next_record_and_the_server_goes_on) {
  Served server({"--hold-ms", "0"});
  serve_one(server, 1);
  hang_up(server, 1);
  serve_one(server, 2);
  BOOST_TEST(server.metric(perf_files_started) == 2);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const auto files = perf_files(server);
  BOOST_REQUIRE_EQUAL(files.size(), 2u);
  BOOST_TEST(files[0].size() == 1u);
  BOOST_TEST(files[1].size() == 1u);
}

BOOST_AUTO_TEST_CASE(perf_keep_files_deletes_the_oldest_perf_metrics_files_as_rotation_starts_new_ones) {
  Served server({"--hold-ms", "0", "--perf-keep-files", "2", "--durable-perf-metrics"});
  for (int i = 1; i <= 4; ++i) {
    serve_one(server, i);
    hang_up(server, static_cast<std::size_t>(i));
  }
  serve_one(server, 5);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const auto files = perf_files(server);
  BOOST_REQUIRE_EQUAL(files.size(), 2u);
  BOOST_TEST(files[0].size() == 1u);
  BOOST_TEST(files[1].size() == 1u);
}

BOOST_AUTO_TEST_CASE(perf_rotate_bytes_starts_a_new_perf_metrics_file_before_a_record_that_would_pass_it) {
  Served server({"--hold-ms", "0", "--perf-rotate-bytes", "1"});
  serve_one(server, 1);
  serve_one(server, 2);
  serve_one(server, 3);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  BOOST_TEST(perf_files(server).size() == 3u);
}
