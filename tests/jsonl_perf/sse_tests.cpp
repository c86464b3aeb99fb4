// Server-sent events as jsonl-perf writes and reads them: one framing, one splitter fed
// a stream's bytes in any cuts.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "sse.hpp"

namespace {

namespace sse = jsonl_perf::sse;

const std::string stream = sse::frame(R"({"n":1})") + sse::frame(R"({"type":"x"})", "response.created") +
                           sse::frame(sse::done_data) + "data: unterminated";

const std::vector<std::string> whole_events{R"(data: {"n":1})", "event: response.created\ndata: {\"type\":\"x\"}",
                                            "data: [DONE]"};

// The events a splitter hands out of `stream` fed in pieces of `cut` bytes, then its rest.
std::vector<std::string> split(std::size_t cut) {
  sse::EventSplitter splitter;
  std::vector<std::string> events;
  for (std::size_t at = 0; at < stream.size(); at += cut) {
    splitter.feed(std::string_view(stream).substr(at, cut));
    while (const auto event = splitter.next()) events.emplace_back(*event);
  }
  events.push_back(splitter.take_rest());
  return events;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sse_events)

BOOST_AUTO_TEST_CASE(an_event_is_framed_with_its_name_line_when_named_and_a_blank_line) {
  BOOST_TEST(sse::frame("[DONE]") == "data: [DONE]\n\n");
  BOOST_TEST(sse::frame("{}", "trtllm.perf_metrics") == "event: trtllm.perf_metrics\ndata: {}\n\n");
}

BOOST_AUTO_TEST_CASE(an_events_data_and_name_are_read_from_their_lines) {
  BOOST_TEST(sse::data_of("event: a\ndata: {\"x\":1}") == "{\"x\":1}");
  BOOST_TEST(sse::name_of("event: a\ndata: {\"x\":1}\n\n") == "a");
  BOOST_TEST(sse::name_of("data: event: a") == "");
  BOOST_TEST(sse::data_of("event: a") == "");
}

BOOST_AUTO_TEST_CASE(the_splitter_hands_out_the_same_events_whatever_the_cuts) {
  std::vector<std::string> expected = whole_events;
  expected.emplace_back("data: unterminated");
  for (std::size_t cut = 1; cut <= stream.size(); ++cut) BOOST_TEST(split(cut) == expected, "cut " << cut);
}

BOOST_AUTO_TEST_CASE(a_stream_that_ends_on_a_blank_line_leaves_no_rest) {
  sse::EventSplitter splitter;
  splitter.feed(sse::frame("a") + sse::frame("b"));
  BOOST_TEST(*splitter.next() == "data: a");
  BOOST_TEST(*splitter.next() == "data: b");
  BOOST_TEST(!splitter.next());
  BOOST_TEST(splitter.take_rest().empty());
}

BOOST_AUTO_TEST_CASE(next_event_walks_a_whole_text_without_copying_it) {
  std::size_t from = 0;
  std::vector<std::string> events;
  while (const auto event = sse::next_event(stream, from)) events.emplace_back(*event);
  BOOST_TEST(events == whole_events);
  BOOST_TEST(stream.substr(from) == "data: unterminated");
}

BOOST_AUTO_TEST_SUITE_END()
