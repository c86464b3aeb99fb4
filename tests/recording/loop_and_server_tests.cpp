// jsonl-perf's loops (loadgen, the benchmarks) write the lines a recording server writes:
// the same request through the loop's trace builder and through a RequestRecorder gives
// the same bytes, once the stamps only one of them can know (trace id, times) are set
// alike.
#include <boost/test/unit_test.hpp>

#include <string>
#include <variant>

#include "recording.hpp"

import jsonl_perf.trace_builder;

using namespace recording_test;

BOOST_AUTO_TEST_SUITE(loop_and_server)

BOOST_AUTO_TEST_CASE(the_loops_builder_and_the_recorder_write_the_same_lines) {
  jsonl_perf::TraceBuilder builder(3, 1);
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  for (int request = 0; request < 200; ++request) {
    const RequestLine built_request = std::get<RequestLine>(builder.next(1000.0 + request).payload);
    const ResponseLine built_response = std::get<ResponseLine>(builder.next(0).payload);

    RequestRecorder::Request recorded = recorder->arrive(built_request.route, built_request.headers);
    recorder->accept(recorded, built_request.body, json::parse(built_request.body));
    recorder->sent(recorded, built_response.frames);
    recorder->finish(recorded, built_response.status,
                     EngineReport{.request_id = built_response.client_id.as_int64()}, std::nullopt,
                     built_response.termination);

    RequestLine server_request = std::get<RequestLine>(handed->lines.at(2 * request));
    server_request.trace_id = built_request.trace_id;
    server_request.recorded_at = built_request.recorded_at;
    server_request.server_arrival_time = built_request.server_arrival_time;
    BOOST_TEST(text_of(server_request) == text_of(built_request));

    ResponseLine server_response = std::get<ResponseLine>(handed->lines.at(2 * request + 1));
    server_response.trace_id = built_response.trace_id;
    server_response.finished_at = built_response.finished_at;
    BOOST_TEST(text_of(server_response) == text_of(built_response));
  }
}

BOOST_AUTO_TEST_SUITE_END()
