// jsonl-perf serve's /v1/messages from outside: Anthropic's Messages API answered in its
// shapes, streamed and not, refused in its envelope, and traced as the reference's
// server traces it (the body as sent, the answer as the client read it).
#define BOOST_TEST_MODULE messages
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

#include "canned_worker.hpp"
#include "served.hpp"

namespace {

using namespace serve_test;

std::string messages_request(bool stream, int max_tokens = 3) {
  return json::serialize(json::object{{"model", "simulated-llm"},
                                      {"system", "Be brief."},
                                      {"messages", json::array{json::object{{"role", "user"}, {"content", "Say hello."}}}},
                                      {"max_tokens", max_tokens},
                                      {"stream", stream},
                                      {"metadata", {{"user_id", "u-1"}}}});
}

// The event names of an Anthropic stream, in order.
std::vector<std::string> event_names(const std::string& stream) {
  std::vector<std::string> names;
  for (std::size_t at = stream.find("event: "); at != std::string::npos; at = stream.find("event: ", at + 1)) {
    names.push_back(stream.substr(at + 7, stream.find('\n', at) - at - 7));
  }
  return names;
}

// The JSON data of the first event named `name`.
json::object event_data(const std::string& stream, const std::string& name) {
  const std::size_t at = stream.find("event: " + name + "\ndata: ");
  BOOST_REQUIRE(at != std::string::npos);
  const std::size_t from = at + name.size() + 14;
  return json::parse(stream.substr(from, stream.find('\n', from) - from)).as_object();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_whole_answer_is_a_message_with_anthropics_usage_and_is_traced_as_json) {
  Served server;
  const auto response = server.post("/v1/messages", messages_request(false));
  BOOST_TEST(response.result_int() == 200u);
  const json::object message = json::parse(response.body()).as_object();
  BOOST_TEST(text_of(message.at("type")) == "message");
  BOOST_TEST(text_of(message.at("role")) == "assistant");
  BOOST_TEST(text_of(message.at("id")).starts_with("msg_"));
  BOOST_TEST(text_of(message.at("stop_reason")) == "max_tokens");  // three tokens asked for, three made
  BOOST_TEST(message.at("stop_sequence").is_null());
  BOOST_REQUIRE_EQUAL(message.at("content").as_array().size(), 1u);
  BOOST_TEST(text_of(message.at("content").at(0).at("type")) == "text");
  BOOST_TEST(message.at("usage").at("output_tokens").as_int64() == 3);
  BOOST_TEST(message.at("usage").at("input_tokens").as_int64() >= 1);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);

  const auto requests = server.lines("requests");
  const auto responses = server.lines("responses");
  BOOST_REQUIRE_EQUAL(requests.size(), 1u);
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  BOOST_TEST(text_of(requests[0].at("route")) == "/v1/messages");
  // The body as the client sent it, before its conversion to chat.
  BOOST_TEST(json::serialize(requests[0].at("body")) == messages_request(false));
  BOOST_TEST(text_of(responses[0].at("response").at("kind")) == "json");
  BOOST_TEST(json::serialize(responses[0].at("response").at("body")) == response.body());
  BOOST_TEST(server.lines("perf_metrics").size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_stream_is_anthropics_events_in_order_and_is_traced_as_sse_text) {
  Served server;
  const auto response = server.post("/v1/messages", messages_request(true, 2));
  BOOST_TEST(response.result_int() == 200u);
  const std::vector<std::string> expected{"message_start",       "content_block_start", "content_block_delta",
                                          "content_block_delta", "content_block_stop",  "message_delta",
                                          "message_stop"};
  BOOST_TEST(event_names(response.body()) == expected, boost::test_tools::per_element());
  // The input side first, with nothing produced yet; the final usage at the end.
  const json::object start = event_data(response.body(), "message_start");
  BOOST_TEST(start.at("message").at("usage").at("input_tokens").as_int64() >= 1);
  BOOST_TEST(start.at("message").at("usage").at("output_tokens").as_int64() == 0);
  const json::object delta = event_data(response.body(), "message_delta");
  BOOST_TEST(text_of(delta.at("delta").at("stop_reason")) == "max_tokens");
  BOOST_TEST(delta.at("usage").at("output_tokens").as_int64() == 2);
  BOOST_TEST(response.body().find("event: ping") == std::string::npos);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);

  const auto responses = server.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  BOOST_TEST(text_of(responses[0].at("status")) == "completed");
  BOOST_TEST(text_of(responses[0].at("response").at("kind")) == "sse_text");
  BOOST_TEST(text_of(responses[0].at("response").at("body")) == response.body());
}

BOOST_AUTO_TEST_CASE(a_body_that_fails_validation_gets_400_in_anthropics_envelope_and_a_rejected_line) {
  Served server;
  const auto response = server.post("/v1/messages", R"({"model":"m","messages":[{"role":"robot","content":"hi"}]})");
  BOOST_TEST(response.result_int() == 400u);
  const json::object body = json::parse(response.body()).as_object();
  BOOST_TEST(text_of(body.at("type")) == "error");
  BOOST_TEST(text_of(body.at("error").at("type")) == "invalid_request_error");
  BOOST_TEST(text_of(body.at("error").at("message")).find("max_tokens") != std::string::npos);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const auto requests = server.lines("requests");
  BOOST_REQUIRE_EQUAL(requests.size(), 1u);
  BOOST_TEST(text_of(requests[0].at("status")) == "rejected_400");
  const json::array& errors = requests[0].at("validation_errors").as_array();  // each part of a loc a string
  BOOST_REQUIRE_EQUAL(errors.size(), 2u);
  BOOST_TEST(json::serialize(errors[0].at("loc")) == R"(["body","messages","0","role"])");
  BOOST_TEST(json::serialize(errors[1]) == R"({"loc":["body","max_tokens"],"type":"missing","msg":"Field required"})");
  BOOST_TEST(server.lines("responses").empty());
}

BOOST_AUTO_TEST_CASE(a_request_the_conversion_refuses_gets_400_with_its_reason) {
  Served server;
  const auto response = server.post(
      "/v1/messages",
      R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"any"},)"
      R"("tools":[{"name":"get_weather","input_schema":{"type":"object"}}]})");
  BOOST_TEST(response.result_int() == 400u);
  BOOST_TEST(response.body() ==
             R"({"type":"error","error":{"type":"invalid_request_error","message":"Anthropic tool_choice type 'any' is )"
             R"(not supported because the chat pipeline cannot require an arbitrary tool call"}})");
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  BOOST_TEST(text_of(server.lines("requests").at(0).at("status")) == "rejected_400");
}

BOOST_AUTO_TEST_CASE(fields_the_model_does_not_declare_are_taken) {
  Served server;
  const auto response = server.post(
      "/v1/messages", R"({"model":"m","max_tokens":2,"messages":[{"role":"user","content":"hi"}],"betas":["x"],"anything":1})");
  BOOST_TEST(response.result_int() == 200u);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
}

BOOST_AUTO_TEST_CASE(count_tokens_answers_the_prompts_tokens_and_is_not_traced) {
  Served server;
  const std::string prompt(400, 'a');  // about four bytes a token
  const auto response = server.post(
      "/v1/messages/count_tokens",
      json::serialize(json::object{{"model", "m"}, {"messages", json::array{json::object{{"role", "user"}, {"content", prompt}}}}}));
  BOOST_TEST(response.result_int() == 200u);
  BOOST_TEST(response.body() == R"({"input_tokens":100})");
  const auto refused = server.post("/v1/messages/count_tokens", R"({"model":"m"})");
  BOOST_TEST(refused.result_int() == 400u);
  BOOST_TEST(text_of(json::parse(refused.body()).at("error").at("type")) == "invalid_request_error");
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  BOOST_TEST(server.lines("requests").empty());
}

BOOST_AUTO_TEST_CASE(a_proxy_sends_messages_to_its_workers_as_chat_and_answers_in_anthropics_shapes) {
  Served context({"--role", "context"});
  Served generation({"--role", "generation"}, context.dir());
  Served proxy({"--role", "proxy", "--ctx-url", context.url(), "--gen-url", generation.url()}, context.dir());
  const auto whole = proxy.post("/v1/messages", messages_request(false, 3));
  BOOST_TEST(whole.result_int() == 200u);
  const json::object message = json::parse(whole.body()).as_object();
  BOOST_TEST(text_of(message.at("type")) == "message");
  BOOST_TEST(text_of(message.at("stop_reason")) == "max_tokens");
  BOOST_TEST(message.at("usage").at("output_tokens").as_int64() >= 1);
  const auto streamed = proxy.post("/v1/messages", messages_request(true, 3));
  BOOST_TEST(streamed.result_int() == 200u);
  const std::vector<std::string> names = event_names(streamed.body());
  BOOST_REQUIRE(names.size() >= 5u);
  BOOST_TEST(names.front() == "message_start");
  BOOST_TEST(names[1] == "content_block_start");
  BOOST_TEST(names[names.size() - 3] == "content_block_stop");
  BOOST_TEST(names[names.size() - 2] == "message_delta");
  BOOST_TEST(names.back() == "message_stop");
  BOOST_TEST(event_data(streamed.body(), "message_start").at("message").at("usage").at("input_tokens").as_int64() >= 1);
  const auto counted = proxy.post("/v1/messages/count_tokens", R"({"model":"m","messages":[{"role":"user","content":"abcdefgh"}]})");
  BOOST_TEST(counted.body() == R"({"input_tokens":2})");  // the context worker's count
  BOOST_REQUIRE_EQUAL(proxy.stop(), 0);
  BOOST_REQUIRE_EQUAL(context.stop(), 0);
  BOOST_REQUIRE_EQUAL(generation.stop(), 0);

  const auto requests = proxy.lines("requests");
  const auto responses = proxy.lines("responses");
  BOOST_REQUIRE_EQUAL(requests.size(), 2u);
  BOOST_REQUIRE_EQUAL(responses.size(), 2u);
  for (const json::object& line : requests) BOOST_TEST(text_of(line.at("route")) == "/v1/messages");
  BOOST_TEST(json::serialize(requests[0].at("body")) == messages_request(false, 3));
  BOOST_TEST(json::serialize(responses[0].at("response").at("body")) == whole.body());
  BOOST_TEST(text_of(responses[1].at("response").at("body")) == streamed.body());
  // Each request's three records join on the proxy's id.
  BOOST_TEST(proxy.lines("perf_metrics-disagg").size() == 2u);
  BOOST_TEST(proxy.lines("perf_metrics-context").size() == 2u);
  BOOST_TEST(proxy.lines("perf_metrics-generation").size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_context_workers_whole_answer_streams_to_the_client_in_anthropics_order) {
  // One token asked for: the context worker's answer is the whole answer, streamed by the proxy.
  Served context({"--role", "context"});
  Served proxy({"--role", "proxy", "--ctx-url", context.url(), "--gen-url", context.url()});
  const auto streamed = proxy.post("/v1/messages", messages_request(true, 1));
  const std::vector<std::string> expected{"message_start", "content_block_start", "content_block_delta",
                                          "content_block_stop", "message_delta", "message_stop"};
  BOOST_TEST(event_names(streamed.body()) == expected, boost::test_tools::per_element());
  BOOST_TEST(event_data(streamed.body(), "message_delta").at("usage").at("output_tokens").as_int64() == 1);
  BOOST_REQUIRE_EQUAL(proxy.stop(), 0);
  BOOST_REQUIRE_EQUAL(context.stop(), 0);
}

BOOST_AUTO_TEST_CASE(a_proxys_count_tokens_is_503_in_anthropics_envelope_when_no_worker_answers) {
  std::optional<Served> context(std::in_place, std::vector<std::string>{"--role", "context"});
  Served proxy({"--role", "proxy", "--ctx-url", context->url(), "--gen-url", context->url()});
  BOOST_REQUIRE_EQUAL(context->stop(), 0);
  context.reset();
  const auto response = proxy.post("/v1/messages/count_tokens", R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
  BOOST_TEST(response.result_int() == 503u);
  BOOST_TEST(text_of(json::parse(response.body()).at("error").at("type")) == "api_error");
  BOOST_REQUIRE_EQUAL(proxy.stop(), 0);
}

BOOST_AUTO_TEST_CASE(an_answer_that_cannot_be_converted_is_a_500_and_traced_conversion_error_with_the_workers_text) {
  // A context worker whose answer is whole (it stopped) with a tool call whose arguments
  // are no JSON object.
  const std::string answer =
      R"({"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1",)"
      R"("type":"function","function":{"name":"f","arguments":"[1]"}}]},"finish_reason":"stop",)"
      R"("disaggregated_params":{"request_type":"context_only","ctx_request_id":5}}]})";
  CannedWorker context(CannedWorker::json_answer(answer));
  Served proxy({"--role", "proxy", "--ctx-url", context.url(), "--gen-url", context.url()});
  const auto response = proxy.post("/v1/messages", messages_request(false));
  BOOST_TEST(response.result_int() == 500u);
  BOOST_TEST(response.body() == R"({"type":"error","error":{"type":"api_error","message":"Tool call 'f' arguments are )"
                                R"(not a valid JSON object"}})");
  BOOST_REQUIRE_EQUAL(proxy.stop(), 0);
  const auto responses = proxy.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  BOOST_TEST(text_of(responses[0].at("status")) == "conversion_error");
  BOOST_TEST(text_of(responses[0].at("response").at("kind")) == "json");
  const std::string upstream = text_of(responses[0].at("response").at("body").at("upstream_body"));
  BOOST_TEST(upstream.find(R"("arguments":"[1]")") != std::string::npos);
  BOOST_TEST(upstream.find("disaggregated_params") == std::string::npos);  // as the client would have had it
}
