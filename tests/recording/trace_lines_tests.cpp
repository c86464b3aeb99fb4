// The trace lines' one spelling (the reference server's keys, order and time format), the
// session policy, and this project's writers as the default destination.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_support.hpp"
#include "recording.hpp"

using namespace recording_test;

namespace {

// 2026-09-03T14:05:09 UTC.
constexpr std::int64_t whole_second_us = 1788444309LL * 1'000'000;
const std::chrono::system_clock::time_point at_whole_second{std::chrono::microseconds(whole_second_us)};

// The body member of a request line holding `sent`.
std::string body_text_of(std::string sent) {
  const std::string line = text_of(RequestLine{.route = "/v1/completions", .status = "accepted", .body = std::move(sent)});
  const std::size_t body = line.find(R"("body":)");
  return line.substr(body + 7, line.size() - body - 8);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(trace_lines)

BOOST_AUTO_TEST_CASE(times_are_spelt_as_python_isoformat_with_no_fraction_on_a_whole_second) {
  BOOST_TEST(iso_utc(whole_second_us) == "2026-09-03T14:05:09+00:00");
  BOOST_TEST(iso_utc(whole_second_us + 120) == "2026-09-03T14:05:09.000120+00:00");
}

BOOST_AUTO_TEST_CASE(a_request_line_has_the_reference_keys_in_its_order_and_no_credential) {
  const RequestLine line{.trace_id = "tr_0123",
                         .session = "conv_7_a",
                         .recorded_at = at_whole_second,
                         .server_arrival_time = 12.5,
                         .route = "/v1/chat/completions",
                         .status = "accepted",
                         .headers = chat_headers,
                         .body = R"({"model":"m","prompt":"caf\u00e9"})"};
  BOOST_TEST(text_of(line) ==
             R"({"event":"request","trace_id":"tr_0123","session":"conv_7_a",)"
             R"("recorded_at":"2026-09-03T14:05:09+00:00","server_arrival_time":12.5,)"
             R"("route":"/v1/chat/completions","status":"accepted",)"
             R"("headers":[["host","127.0.0.1:8000"],["content-type","application/json"],)"
             R"(["authorization","[redacted]"],["x-session-id","conv 7/a"]],)"
             "\"body\":{\"model\":\"m\",\"prompt\":\"caf\xC3\xA9\"}}");
}

BOOST_AUTO_TEST_CASE(a_response_line_has_the_reference_keys_in_its_order) {
  const ResponseLine streamed{.trace_id = "tr_0123",
                              .session = "_no_session",
                              .finished_at = at_whole_second + std::chrono::microseconds(5),
                              .status = Outcome::client_disconnected,
                              .client_id = 41,
                              .disagg_request_id = 41,
                              .ctx_request_id = nullptr,
                              .termination = Termination{"client_disconnected", "write failed"},
                              .frames = "data: {}\n\n"};
  BOOST_TEST(text_of(streamed) ==
             R"({"event":"response","trace_id":"tr_0123","session":"_no_session",)"
             R"("finished_at":"2026-09-03T14:05:09.000005+00:00","status":"client_disconnected",)"
             R"("client_id":41,"disagg_request_id":41,"ctx_request_id":null,)"
             R"("termination":{"cause":"client_disconnected","detail":"write failed"},)"
             R"("response":{"kind":"sse_text","body":"data: {}\n\n"}})");
}

BOOST_AUTO_TEST_CASE(a_body_is_written_as_python_reads_it_integers_of_any_size_exact) {
  const std::string sent = R"({"seed":123456789012345678901234,"n":-98765432109876543210,"zero":-0,)"
                           R"("t":0.1000000000000000055511151231257827,"big":1e400,"a":[1,{"k":1,"k":[2, 3]}],)"
                           R"("k":"\u00e9\/","k2":NaN,"n":18446744073709551615})";
  BOOST_TEST(body_text_of(sent) == R"({"seed":123456789012345678901234,"n":18446744073709551615,"zero":0,"t":0.1,)"
                                   R"("big":Infinity,"a":[1,{"k":[2,3]}],"k":")" "\xC3\xA9" R"(/","k2":NaN})");
}

BOOST_AUTO_TEST_CASE(a_wide_integer_is_kept_exact_wherever_it_lies_in_the_body) {
  const std::string wide = "12345678901234567890123";
  BOOST_TEST(body_text_of(wide) == wide);
  for (std::size_t before = 0; before <= 40; ++before) {
    for (std::size_t digits = 1; digits <= 18; ++digits) {
      const std::string sent = "[\"" + std::string(before, 'x') + "\"," + std::string(digits, '7') + "," + wide + "]";
      BOOST_TEST_REQUIRE(body_text_of(sent) == sent);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_body_without_wide_integers_is_written_as_python_reads_it) {
  const std::string sent = R"({"model":"m","temperature":1E2,"x":-0.0,"x":-Infinity,"top_p":5e-324,"s":"tab\there"})";
  BOOST_TEST(body_text_of(sent) == R"({"model":"m","temperature":100.0,"x":-Infinity,"top_p":5e-324,"s":"tab\there"})");
}

BOOST_AUTO_TEST_CASE(a_body_that_is_not_json_makes_the_line_malformed_unless_recorded_as_unparsed) {
  for (const std::string body : {"{\"model\":", "{\"seed\":12345678901234567890123} {}", "[1] 2"}) {
    std::string text;
    BOOST_CHECK_THROW(append_trace_line(RequestLine{.route = "/v1/completions", .body = body}, text), jsonl::MalformedRecord);
  }
  BOOST_TEST(body_text_of("{\"seed\":12345678901234567890123}\r\n") == R"({"seed":12345678901234567890123})");
  RequestLine line{.route = "/v1/completions", .status = "rejected_400", .body = "{\"model\":"};
  line.body_parse_error = "cut short";
  BOOST_TEST(text_of(line).find(R"("body":"{\"model\":")") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_session_is_the_bodys_conversation_id_before_any_header) {
  const Headers headers{{"x-claude-code-session-id", "from-header"}};
  BOOST_TEST(session_of(headers, json::parse(R"({"conversation_params":{"conversation_id":" chat 9 "}})")) == "chat_9");
  BOOST_TEST(session_of(headers, json::parse(R"({"conversation_params":{"conversation_id":42}})")) == "42");
  BOOST_TEST(session_of(headers, json::parse(R"({"conversation_params":{"conversation_id":"  "}})")) == "from-header");
}

BOOST_AUTO_TEST_CASE(the_session_headers_are_read_in_the_references_order_skipping_blank_ones) {
  const json::object no_ids;
  BOOST_TEST(session_of({{"X-Claude-Code-Session-Id", "a/b c"}}, no_ids) == "a_b_c");
  BOOST_TEST(session_of({{"x-session-id", "later"}, {"x-claude-session-id", "first"}}, no_ids) == "first");
  BOOST_TEST(session_of({{"x-claude-code-session-id", " "}, {"x-correlation-id", "c1"}}, no_ids) == "c1");
  BOOST_TEST(session_of({{"x-session-id", "one"}, {"x-session-id", "two"}}, no_ids) == "two");
  BOOST_TEST(session_of({{"x-session-id", ""}, {"x-conversation-id", "conv9"}}, no_ids) == "_no_session");
}

BOOST_AUTO_TEST_CASE(without_a_session_header_the_bodys_client_fields_name_the_session) {
  const Headers none{{"host", "h"}};
  BOOST_TEST(session_of(none, json::parse(R"({"prompt_cache_key":"k1","client_metadata":{"thread_id":"t1"}})")) == "k1");
  BOOST_TEST(session_of(none, json::parse(R"({"client_metadata":{"thread_id":"t1","session_id":"s1"}})")) == "t1");
  BOOST_TEST(session_of(none, json::parse(R"({"client_metadata":{"session_id":"s1"}})")) == "s1");
  BOOST_TEST(session_of({{"x-multi-turn-session-id", "m1"}}, json::parse(R"({"prompt_cache_key":"k1"})")) == "m1");
  BOOST_TEST(session_of(none, json::object{}) == "_no_session");
}

BOOST_AUTO_TEST_CASE(the_default_destination_writes_both_streams_and_runs_the_callers_thread_hook) {
  const jsonl_test::ScratchDirectory dir;
  std::atomic<int> threads_started{0};
  {
    RequestRecorder recorder({.output_dir = dir.path(),
                              .on_writer_thread_start = [&threads_started] { threads_started.fetch_add(1); }});
    BOOST_REQUIRE(recorder.start());
    streamed_request(recorder, 7);
    recorder.close();
    BOOST_TEST(recorder.accounting_line() ==
               "perf metrics: submitted 1, written 1, unknown 0, dropped 0; "
               "request traces: submitted 2, written 2, unknown 0, dropped 0");
    BOOST_TEST(recorder.destination()->writer_metrics().size() == 2u);
  }
  // Each writer's drain and write worker.
  BOOST_TEST(threads_started.load() >= 2);
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (entry.path().extension() == ".jsonl") ++files;
  }
  BOOST_TEST(files == 3u);  // the perf records, the requests and the responses
}

BOOST_AUTO_TEST_SUITE_END()
