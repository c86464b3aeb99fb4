// The serve benchmark's floor peer: the recorder's lines as the writers' formats make
// them, written by the caller's thread a batch of lines_a_write lines at a time.
#define BOOST_TEST_MODULE recording_peer_tests

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "test_support.hpp"
#include "recording_peers.hpp"

namespace {

using namespace jsonl_perf::serve;
namespace recording = jsonl::recording;

// A floor recording into a scratch directory, started. `response_file`, when given, is
// linked at the responses' file's name first (a file that refuses writes, say).
struct Floor {
  jsonl_test::ScratchDirectory scratch;
  std::unique_ptr<recording::RecordingDestination> destination;

  explicit Floor(bool durable_traces = false, const std::filesystem::path& response_file = {}) {
    if (!response_file.empty()) {
      std::filesystem::create_directories(scratch.path() / "request_trace");
      std::filesystem::create_symlink(response_file, scratch.path() / "request_trace" / "responses.jsonl");
    }
    recording::RecorderOptions options;
    options.output_dir = scratch.path();
    options.server_kind = "server";
    options.durable_traces = durable_traces;
    destination = floor_destination(options);
    BOOST_REQUIRE(destination->start());
  }

  std::string responses() const { return jsonl_test::read_file(scratch.path() / "request_trace" / "responses.jsonl"); }
};

recording::RequestLine request_line(std::string body) {
  recording::RequestLine line;
  line.trace_id = "trace-1";
  line.session = "_no_session";
  line.recorded_at = std::chrono::system_clock::time_point(std::chrono::seconds(1'788'000'000));
  line.route = "/v1/chat/completions";
  line.status = "accepted";
  line.headers = {{"content-type", "application/json"}};
  line.body = std::move(body);
  return line;
}

recording::ResponseLine response_line(int n) {
  recording::ResponseLine line;
  line.trace_id = "trace-" + std::to_string(n);
  line.session = "_no_session";
  line.finished_at = std::chrono::system_clock::time_point(std::chrono::seconds(1'788'000'001));
  line.client_id = n;
  line.frames = "data: {\"choices\":[{\"delta\":{\"content\":\"\\\"hi\\\"\\n\"}}]}\n\ndata: [DONE]\n\n";
  return line;
}

jsonl::perf::PerfMetricsRecord perf_record(int n) {
  jsonl::perf::PhaseMetrics server{.first_iter = 1,
                                   .last_iter = 16,
                                   .timing_metrics = jsonl::perf::TimingMetrics{.arrival_time = 1.0,
                                                                                .first_scheduled_time = 1.25,
                                                                                .first_token_time = 1.5,
                                                                                .last_token_time = 2.0}};
  return {.request_id = std::int64_t{n}, .phases = {.server = std::move(server)}};
}

template <class Format, class Record>
std::string line_of(const Format& format, Record record) {
  std::string text;
  format.append_line(record, text);
  return text;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_floor_writes_each_line_as_the_writers_formats_make_it) {
  const recording::TraceLineFormat trace_format{jsonl::JsonTextOptions{}};
  const jsonl::PerfMetricsTypedFormat perf_format;
  Floor floor;
  floor.destination->trace(request_line(R"({"model":"m","max_tokens":12345678901234567890})"));
  floor.destination->trace(response_line(1));
  floor.destination->perf(perf_record(1));
  floor.destination->close();

  const std::filesystem::path& directory = floor.scratch.path();
  BOOST_TEST(jsonl_test::read_file(directory / "request_trace" / "requests.jsonl") ==
             line_of(trace_format, recording::TraceLine(request_line(R"({"model":"m","max_tokens":12345678901234567890})"))));
  BOOST_TEST(floor.responses() == line_of(trace_format, recording::TraceLine(response_line(1))));
  BOOST_TEST(jsonl_test::read_file(directory / "perf_metrics" / "perf_metrics-server-floor.jsonl") ==
             line_of(perf_format, perf_record(1)));
  BOOST_TEST(floor.destination->accounting_line() == "floor: written 3, dropped 0, synced 0 writes");
}

BOOST_AUTO_TEST_CASE(the_floor_writes_a_files_lines_a_batch_at_a_time_and_the_rest_at_close) {
  const recording::TraceLineFormat trace_format{jsonl::JsonTextOptions{}};
  Floor floor;
  std::string batch;
  for (std::size_t n = 1; n < lines_a_write; ++n) {
    floor.destination->trace(response_line(static_cast<int>(n)));
    batch += line_of(trace_format, recording::TraceLine(response_line(static_cast<int>(n))));
  }
  BOOST_TEST(floor.responses().empty());
  floor.destination->trace(response_line(static_cast<int>(lines_a_write)));
  batch += line_of(trace_format, recording::TraceLine(response_line(static_cast<int>(lines_a_write))));
  BOOST_TEST(floor.responses() == batch);

  floor.destination->trace(response_line(0));
  BOOST_TEST(floor.responses() == batch);
  floor.destination->close();
  BOOST_TEST(floor.responses() == batch + line_of(trace_format, recording::TraceLine(response_line(0))));
}

BOOST_AUTO_TEST_CASE(a_line_the_floor_cannot_make_is_counted_dropped_and_the_rest_written) {
  Floor floor;
  floor.destination->trace(request_line("{\"model\": "));
  floor.destination->trace(request_line("{}"));
  floor.destination->close();
  BOOST_TEST(jsonl_test::read_lines(floor.scratch.path() / "request_trace" / "requests.jsonl").size() == 1u);
  BOOST_TEST(floor.destination->accounting_line() == "floor: written 1, dropped 1, synced 0 writes");
}

BOOST_AUTO_TEST_CASE(a_durable_floor_syncs_each_batch_of_a_durable_file_before_counting_it) {
  Floor floor(true);
  for (std::size_t n = 0; n < lines_a_write + 1; ++n) floor.destination->trace(response_line(static_cast<int>(n)));
  floor.destination->perf(perf_record(1));
  BOOST_TEST(floor.destination->accounting_line() == "floor: written 16, dropped 0, synced 1 writes");
  floor.destination->close();
  BOOST_TEST(floor.destination->accounting_line() == "floor: written 18, dropped 0, synced 2 writes");
}

BOOST_AUTO_TEST_CASE(a_batch_its_file_refuses_is_counted_dropped_and_the_other_files_written) {
  Floor floor(false, "/dev/full");
  for (std::size_t n = 0; n < lines_a_write; ++n) floor.destination->trace(response_line(static_cast<int>(n)));
  floor.destination->trace(request_line("{}"));
  floor.destination->close();
  BOOST_TEST(floor.destination->accounting_line() == "floor: written 1, dropped 16, synced 0 writes");
}
