// One request of each kind through the recorder, its lines compared byte for byte with
// lines written out by hand from the reference server's rules (request_trace.py and the
// FastAPI app around it): its keys and their order, json.dumps(ensure_ascii=False) with
// compact separators, header names as ASGI hands them over, credentials redacted, loc
// parts as str(), the body as json.loads reads it. What differs from run to run (the
// trace id, the wall times, the steady arrival) is put in angle brackets on both sides.
#include <boost/test/unit_test.hpp>

#include <regex>
#include <string>
#include <vector>

#include "recording.hpp"

using namespace recording_test;

namespace {

const Headers client_headers{{"Host", "127.0.0.1:8000"},
                             {"Content-Type", "application/json"},
                             {"Authorization", "Bearer sk-a-credential"},
                             {"X-Session-Id", "conv 7/a"},
                             {"X-Forwarded-For", "10.0.0.1"},
                             {"x-forwarded-for", "10.0.0.2"}};

const std::string recorded_headers =
    R"([["host","127.0.0.1:8000"],["content-type","application/json"],["authorization","[redacted]"],)"
    R"(["x-session-id","conv 7/a"],["x-forwarded-for","10.0.0.1"],["x-forwarded-for","10.0.0.2"]])";

// The lines handed over so far, as written, what varies put in angle brackets.
std::vector<std::string> written_lines(Handed& handed) {
  static const std::regex trace_id(R"("trace_id":"tr_[0-9a-f]+")");
  static const std::regex wall_time(R"re("(recorded_at|finished_at)":"[^"]+")re");
  static const std::regex arrival(R"("server_arrival_time":[0-9.e+-]+)");
  std::vector<std::string> lines;
  for (const TraceLine& line : handed.lines) {
    std::string text = std::regex_replace(text_of(line), trace_id, R"("trace_id":"<id>")");
    text = std::regex_replace(text, wall_time, R"("$1":"<time>")");
    lines.push_back(std::regex_replace(text, arrival, R"("server_arrival_time":<steady>)"));
  }
  return lines;
}

std::string request_line(std::string_view route, std::string_view status, std::string_view body,
                         std::string_view session = "conv_7_a") {
  return R"({"event":"request","trace_id":"<id>","session":")" + std::string(session) +
         R"(","recorded_at":"<time>","server_arrival_time":<steady>,"route":")" + std::string(route) +
         R"(","status":")" + std::string(status) + R"(","headers":)" + recorded_headers + R"(,"body":)" +
         std::string(body);
}

std::string response_line(std::string_view status, std::string_view ids, std::string_view rest) {
  return R"({"event":"response","trace_id":"<id>","session":"conv_7_a","finished_at":"<time>","status":")" +
         std::string(status) + "\"," + std::string(ids) + "," + std::string(rest) + "}";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(conformance)

BOOST_AUTO_TEST_CASE(a_streamed_chat_request_that_completed) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  const std::string body = R"({"model": "m", "messages": [{"role": "user", "content": "caf\u00e9 \"\/\" \ud83d\ude00"}],)"
                           R"( "stream": true, "seed": 123456789012345678901234})";
  RequestRecorder::Request request = recorder->arrive("/v1/chat/completions", client_headers);
  recorder->accept(request, body, json::parse(body));
  recorder->first_token(request);
  recorder->sent(request, "data: {\"choices\":[{\"delta\":{\"content\":\"h\\u00e9\"}}]}\n\n");
  recorder->sent(request, "data: [DONE]\n\n");
  recorder->finish(request, Outcome::completed, EngineReport{.request_id = 41});

  const std::vector<std::string> expected{
      request_line("/v1/chat/completions", "accepted",
                   "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xC3\xA9 \\\"/\\\" \xF0\x9F\x98\x80\"}],"
                   "\"stream\":true,\"seed\":123456789012345678901234}}"),
      response_line("completed", R"("client_id":41,"disagg_request_id":41,"ctx_request_id":null)",
                    R"("response":{"kind":"sse_text","body":"data: {\"choices\":[{\"delta\":{\"content\":\"h\\u00e9\"}}]}\n\ndata: [DONE]\n\n"})")};
  BOOST_TEST(written_lines(*handed) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_completion_answered_whole) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed, {.engine_id_as_disagg_request_id = false});
  const std::string body = R"({"model":"m","prompt":["a","b"],"temperature":0.7,"top_p":1e0,"n":-0})";
  RequestRecorder::Request request = recorder->arrive("/v1/completions", client_headers);
  recorder->accept(request, body, json::parse(body));
  recorder->finish(request, Outcome::completed, EngineReport{.request_id = 7},
                   json::value{{"id", "cmpl-7"}, {"choices", json::array{json::object{{"text", "ok"}, {"logprobs", nullptr}}}}});

  const std::vector<std::string> expected{
      request_line("/v1/completions", "accepted", R"({"model":"m","prompt":["a","b"],"temperature":0.7,"top_p":1.0,"n":0}})"),
      response_line("completed", R"("client_id":7,"disagg_request_id":null,"ctx_request_id":null)",
                    R"("response":{"kind":"json","body":{"id":"cmpl-7","choices":[{"text":"ok","logprobs":null}]}})")};
  BOOST_TEST(written_lines(*handed) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_body_that_is_not_json) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  RequestRecorder::Request request = recorder->arrive("/v1/chat/completions", client_headers);
  recorder->reject_unparsed(
      request, "{\"model\": \"m\xff\",", "JSONDecodeError: cut short at byte 14",
      json::array{json::object{{"loc", json::array{"body", 14}}, {"type", "json_invalid"}, {"msg", "JSON decode error"}}});

  const std::vector<std::string> expected{
      request_line("/v1/chat/completions", "rejected_400", "\"{\\\"model\\\": \\\"m\xEF\xBF\xBD\\\",\"") +
      R"(,"validation_errors":[{"loc":["body","14"],"type":"json_invalid","msg":"JSON decode error"}],)"
      R"("body_parse_error":"JSONDecodeError: cut short at byte 14"})"};
  BOOST_TEST(written_lines(*handed) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_body_the_model_refuses) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  const std::string body = R"({"model":"m","messages":[],"client_metadata":{"session_id":"s1"},"extra":NaN})";
  RequestRecorder::Request request =
      recorder->arrive("/v1/chat/completions", {{"Host", "127.0.0.1:8000"}, {"Content-Type", "application/json"}});
  recorder->reject(request, body, json::parse(body, {}, {.allow_infinity_and_nan = true}),
                   json::array{json::object{{"type", "extra_forbidden"},
                                            {"loc", json::array{"body", "extra"}},
                                            {"msg", "Extra inputs are not permitted"},
                                            {"input", nullptr}}});

  BOOST_TEST(written_lines(*handed).at(0) ==
             R"({"event":"request","trace_id":"<id>","session":"s1","recorded_at":"<time>",)"
             R"("server_arrival_time":<steady>,"route":"/v1/chat/completions","status":"rejected_400",)"
             R"("headers":[["host","127.0.0.1:8000"],["content-type","application/json"]],)"
             R"("body":{"model":"m","messages":[],"client_metadata":{"session_id":"s1"},"extra":NaN},)"
             R"("validation_errors":[{"loc":["body","extra"],"type":"extra_forbidden","msg":"Extra inputs are not permitted"}]})");
}

BOOST_AUTO_TEST_CASE(a_stream_whose_client_hung_up_and_an_answer_whose_client_left_before_it) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  const std::string body = R"({"model":"m","prompt":"x"})";
  RequestRecorder::Request streamed = recorder->arrive("/v1/completions", client_headers);
  recorder->accept(streamed, body, json::parse(body));
  recorder->sent(streamed, "data: {}\n\n");
  recorder->finish(streamed, Outcome::client_disconnected, EngineReport{.request_id = 8}, std::nullopt,
                   Termination{"client_disconnected", "Broken pipe"});
  RequestRecorder::Request whole = recorder->arrive("/v1/completions", client_headers);
  recorder->accept(whole, body, json::parse(body));
  recorder->finish(whole, Outcome::client_disconnected, EngineReport{.request_id = 9});

  const std::vector<std::string> lines = written_lines(*handed);
  BOOST_REQUIRE_EQUAL(lines.size(), 4u);
  BOOST_TEST(lines[1] == response_line("client_disconnected", R"("client_id":8,"disagg_request_id":8,"ctx_request_id":null)",
                                       R"("termination":{"cause":"client_disconnected","detail":"Broken pipe"},)"
                                       R"("response":{"kind":"sse_text","body":"data: {}\n\n"})"));
  BOOST_TEST(lines[3] == response_line("client_disconnected", R"("client_id":9,"disagg_request_id":9,"ctx_request_id":null)",
                                       R"("response":{"kind":"json","body":null})"));
}

BOOST_AUTO_TEST_CASE(a_proxied_request_answered_by_its_context_worker) {
  auto handed = std::make_shared<Handed>();
  auto recorder = keeping_recorder(handed);
  const std::string body = R"({"model":"m","prompt":"x","conversation_params":{"conversation_id":12}})";
  RequestRecorder::Request request = recorder->arrive("/v1/completions", client_headers);
  recorder->accept(request, body, json::parse(body));
  recorder->finish(request, Outcome::completed,
                   ProxyReport{.disagg_request_id = 9000, .ctx_request_id = 77, .ctx_server = "127.0.0.1:1"},
                   json::value{{"id", "cmpl-9000"}});

  const std::vector<std::string> lines = written_lines(*handed);
  BOOST_REQUIRE_EQUAL(lines.size(), 2u);
  BOOST_TEST(lines[0].find(R"("session":"12",)") != std::string::npos);
  BOOST_TEST(lines[1] == R"({"event":"response","trace_id":"<id>","session":"12","finished_at":"<time>",)"
                         R"("status":"completed","client_id":9000,"disagg_request_id":9000,"ctx_request_id":77,)"
                         R"("response":{"kind":"json","body":{"id":"cmpl-9000"}}})");
}

BOOST_AUTO_TEST_SUITE_END()
