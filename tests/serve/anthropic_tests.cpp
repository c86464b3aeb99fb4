// The Messages API's conversion in process: a request to chat and refused as the
// reference refuses it, a chat answer to a message, a chat stream to Anthropic's events.
#define BOOST_TEST_MODULE anthropic
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "anthropic.hpp"
#include "openai.hpp"

namespace {

namespace json = boost::json;
namespace anthropic = jsonl_perf::serve::anthropic;
using jsonl_perf::serve::Answer;
using jsonl_perf::serve::Route;

json::object parsed(std::string_view text) { return json::parse(text).as_object(); }

// The chat request `body` converts to, as text.
std::string converted(std::string_view body) { return json::serialize(anthropic::to_chat_request(parsed(body))); }

// What the conversion refuses `body` with.
std::string refusal(std::string_view body) {
  try {
    anthropic::to_chat_request(parsed(body));
  } catch (const anthropic::RequestError& error) {
    return error.what();
  }
  return "(taken)";
}

std::vector<std::string> event_names(const std::string& stream) {
  std::vector<std::string> names;
  for (std::size_t at = stream.find("event: "); at != std::string::npos; at = stream.find("event: ", at + 1)) {
    names.push_back(stream.substr(at + 7, stream.find('\n', at) - at - 7));
  }
  return names;
}

// A chat stream of two tokens with the usage on every chunk, then [DONE]. Each part in
// its turn: the operands of + are evaluated in no set order.
std::string chat_stream() {
  Answer chat(Route::chat_completions, "m", 12, 4, true, true);
  std::string stream = chat.stream_opening();
  stream += chat.stream_token("Hel");
  stream += chat.stream_token("lo");
  stream += chat.stream_closing("stop");
  return stream;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_body_without_its_required_fields_is_refused_naming_each) {
  const json::array errors = anthropic::validate_messages(json::parse(R"({"messages":"hi"})"));
  BOOST_REQUIRE_EQUAL(errors.size(), 3u);
  BOOST_TEST(json::serialize(errors[0]) == R"({"loc":["body","model"],"type":"missing","msg":"Field required"})");
  BOOST_TEST(json::serialize(errors[1].at("loc")) == R"(["body","messages"])");
  BOOST_TEST(json::serialize(errors[2].at("loc")) == R"(["body","max_tokens"])");
  BOOST_TEST(anthropic::validate_messages(json::parse(R"({"model":"m","max_tokens":1,"messages":[],"extra":1})")).empty());
}

BOOST_AUTO_TEST_CASE(a_content_block_of_an_unknown_type_is_refused_where_it_is) {
  const json::array errors = anthropic::validate_messages(
      json::parse(R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"video"}]}]})"));
  BOOST_REQUIRE_EQUAL(errors.size(), 1u);
  BOOST_TEST(json::serialize(errors[0].at("loc")) == R"(["body","messages",0,"content",0,"type"])");
}

BOOST_AUTO_TEST_CASE(a_tool_results_content_is_checked_as_content) {
  const json::array errors = anthropic::validate_messages(json::parse(
      R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":7}]}]})"));
  BOOST_REQUIRE_EQUAL(errors.size(), 1u);
  BOOST_TEST(json::serialize(errors[0].at("loc")) == R"(["body","messages",0,"content",0,"content"])");
}

BOOST_AUTO_TEST_CASE(max_tokens_stop_sequences_and_a_stream_become_the_chat_requests_fields) {
  BOOST_TEST(converted(R"({"model":"m","max_tokens":7,"stream":true,"stop_sequences":["END"],"top_k":3,)"
                       R"("messages":[{"role":"user","content":"hi"}]})") ==
             R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":7,"stream":true,)"
             R"("top_k":3,"stop":["END"],"stream_options":{"include_usage":true,"continuous_usage_stats":true}})");
}

BOOST_AUTO_TEST_CASE(the_system_text_and_leading_system_messages_open_the_prompt_and_a_later_one_stays_in_place) {
  BOOST_TEST(converted(R"({"model":"m","max_tokens":1,"system":[{"type":"text","text":"A"}],"messages":[)"
                       R"({"role":"system","content":"B"},{"role":"user","content":"hi"},{"role":"system","content":"C"}]})") ==
             R"({"model":"m","messages":[{"role":"system","content":"A\n\nB"},{"role":"user","content":"hi"},)"
             R"({"role":"system","content":"C"}],"max_completion_tokens":1,"stream":false})");
}

BOOST_AUTO_TEST_CASE(a_billing_block_first_in_the_system_text_is_not_the_models) {
  BOOST_TEST(converted(R"({"model":"m","max_tokens":1,"system":[{"type":"text","text":)"
                       R"("x-anthropic-billing-header: cc_version=2.1.3; cc_entrypoint=cli; cch=0a1b2;"},)"
                       R"({"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":"hi"}]})")
                 .starts_with(R"({"model":"m","messages":[{"role":"system","content":"Be brief."},)"));
}

BOOST_AUTO_TEST_CASE(tool_use_and_tool_result_blocks_become_tool_calls_and_tool_messages) {
  const std::string chat = converted(
      R"({"model":"m","max_tokens":1,"tools":[{"name":"weather","input_schema":{"type":"object"}}],"messages":[)"
      R"({"role":"assistant","content":[{"type":"text","text":"Looking."},)"
      R"({"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Oslo","days":[1,2]}}]},)"
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"rain","is_error":true},)"
      R"({"type":"text","text":"thanks"}]}]})");
  BOOST_TEST(chat.find(R"({"role":"assistant","content":"Looking.","tool_calls":[{"id":"toolu_1","type":"function",)"
                       R"("function":{"name":"weather","arguments":"{\"city\": \"Oslo\", \"days\": [1, 2]}"}}]})") !=
             std::string::npos);
  BOOST_TEST(chat.find(R"({"role":"tool","tool_call_id":"toolu_1","content":"Tool execution failed: rain"},)"
                       R"({"role":"user","content":[{"type":"text","text":"thanks"}]})") != std::string::npos);
  BOOST_TEST(chat.find(R"("tool_choice":"auto")") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(what_the_chat_path_cannot_take_is_refused_with_its_reason) {
  const std::string user = R"("messages":[{"role":"user","content":"hi"}])";
  BOOST_TEST(refusal(R"({"model":"m","max_tokens":9,"tools":[{"name":"s","type":"web_search_20250305"}],)" + user + "}") ==
             "Anthropic server tool 's' (type='web_search_20250305') is not supported by this server");
  BOOST_TEST(refusal(R"({"model":"m","max_tokens":9,"tools":[{"name":"t"}],)" + user + "}") ==
             "Client tool 't' requires input_schema");
  BOOST_TEST(refusal(R"({"model":"m","max_tokens":9,"thinking":{"type":"enabled","budget_tokens":100},)" + user + "}") ==
             "thinking.type='enabled' requires budget_tokens >= 1024");
  BOOST_TEST(refusal(R"({"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"thinking","thinking":"x"}]}]})") ==
             "thinking content blocks are only valid in assistant messages");
  BOOST_TEST(refusal(R"({"model":"m","max_tokens":9,"messages":[]})") == "messages must not be empty");
}

BOOST_AUTO_TEST_CASE(a_whole_chat_answer_becomes_a_message_with_the_cached_tokens_apart) {
  const json::object message = anthropic::to_message(parsed(
      R"({"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],)"
      R"("usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}})"));
  BOOST_TEST(json::serialize(message.at("content")) == R"([{"type":"text","text":"Hi"}])");
  BOOST_TEST(json::serialize(message.at("usage")) == R"({"input_tokens":6,"output_tokens":2,"cache_read_input_tokens":4})");
  BOOST_TEST(message.at("stop_reason") == "end_turn");
  BOOST_TEST(message.at("stop_sequence").is_null());
}

BOOST_AUTO_TEST_CASE(a_chat_answer_without_text_still_gives_a_content_block) {
  const json::object message = anthropic::to_message(parsed(R"({"model":"m","choices":[]})"));
  BOOST_TEST(json::serialize(message.at("content")) == R"([{"type":"text","text":""}])");
}

BOOST_AUTO_TEST_CASE(a_tool_calls_arguments_that_are_no_object_cannot_be_converted) {
  BOOST_CHECK_THROW(anthropic::to_message(parsed(
                        R"({"model":"m","choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1]"}}]},)"
                        R"("finish_reason":"tool_calls"}]})")),
                    anthropic::ResponseError);
}

BOOST_AUTO_TEST_CASE(a_stream_is_reframed_in_anthropics_order_with_the_usage_at_start_and_end) {
  anthropic::StreamReframer reframer("m");
  const std::string events = reframer.feed(chat_stream());
  const std::vector<std::string> expected{"message_start",       "content_block_start", "content_block_delta",
                                          "content_block_delta", "content_block_stop",  "message_delta",
                                          "message_stop"};
  BOOST_TEST(event_names(events) == expected, boost::test_tools::per_element());
  BOOST_TEST(events.find(R"("usage":{"input_tokens":8,"output_tokens":0,"cache_read_input_tokens":4}}})") != std::string::npos);
  BOOST_TEST(events.find(R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},)"
                         R"("usage":{"input_tokens":8,"output_tokens":2,"cache_read_input_tokens":4}})") != std::string::npos);
  BOOST_TEST(events.find(R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}})") !=
             std::string::npos);
  BOOST_TEST(reframer.ended());
}

BOOST_AUTO_TEST_CASE(a_stream_cut_at_every_byte_gives_the_same_events) {
  const std::string chat = chat_stream();
  anthropic::StreamReframer whole("m");
  const std::string expected = whole.feed(chat);
  anthropic::StreamReframer cut("m");
  std::string events;
  for (const char byte : chat) events += cut.feed(std::string_view(&byte, 1));
  // Each reframer names its own message: compare the events past the id.
  BOOST_TEST(event_names(events) == event_names(expected), boost::test_tools::per_element());
  BOOST_TEST(events.substr(events.find("\"type\":\"message\"")) == expected.substr(expected.find("\"type\":\"message\"")));
}

BOOST_AUTO_TEST_CASE(a_failure_mid_stream_closes_the_block_and_ends_with_an_error_event) {
  Answer chat(Route::chat_completions, "m", 12, 0, true, true);
  anthropic::StreamReframer reframer("m");
  std::string chat_text = chat.stream_opening();
  chat_text += chat.stream_token("Hel");
  std::string events = reframer.feed(chat_text);
  events += reframer.fail("Internal server error");
  const std::vector<std::string> expected{"message_start", "content_block_start", "content_block_delta",
                                          "content_block_stop", "error"};
  BOOST_TEST(event_names(events) == expected, boost::test_tools::per_element());
  BOOST_TEST(events.ends_with(
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}\n\n"));
}

BOOST_AUTO_TEST_CASE(a_chunk_that_is_no_json_cannot_be_reframed) {
  anthropic::StreamReframer reframer("m");
  BOOST_CHECK_THROW(reframer.feed("data: {not json\n\n"), anthropic::ResponseError);
}

BOOST_AUTO_TEST_CASE(count_tokens_converts_with_one_token_asked_for) {
  const json::object chat = anthropic::count_tokens_chat_request(parsed(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})"));
  BOOST_TEST(chat.at("max_completion_tokens").as_int64() == 1);
}

BOOST_AUTO_TEST_CASE(an_error_is_in_anthropics_envelope_typed_by_its_status) {
  BOOST_TEST(anthropic::error_body(anthropic::error_type_of(404), "no") ==
             R"({"type":"error","error":{"type":"invalid_request_error","message":"no"}})");
  BOOST_TEST(anthropic::error_type_of(503) == "api_error");
}
