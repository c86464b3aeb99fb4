// What a request handler's thread pays to record a request: the recording layer moves
// what the handler already holds (headers, the body's text, the frames it sent) into typed
// lines, and builds no JSON of its own there for a writer's thread to free.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

#include "counted_heap.hpp"

import jsonl.recording;

namespace json = boost::json;
using jsonl::recording::RequestRecorder;

namespace {

// Takes every line and record and lets it go at once, on the caller's thread.
class Discarding final : public jsonl::recording::RecordingDestination {
 public:
  bool start() override { return true; }
  void close() override {}
  bool trace(jsonl::recording::TraceLine) override { return true; }
  bool perf(jsonl::perf::PerfMetricsRecord) override { return true; }
  std::vector<jsonl::WriterMetrics> writer_metrics() const override { return {}; }
  std::string accounting_line() const override { return {}; }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(recording)

BOOST_AUTO_TEST_CASE(recording_a_streamed_request_costs_its_thread_a_handful_of_allocations) {
  RequestRecorder recorder({}, std::make_unique<Discarding>());
  BOOST_REQUIRE(recorder.start());
  jsonl::recording::Headers headers{{"Host", "127.0.0.1"},
                                   {"Content-Type", "application/json"},
                                   {"Authorization", "Bearer sk-not-a-real-key-but-long-enough"},
                                   {"User-Agent", "a-client-with-a-long-enough-name"}};
  std::string text =
      R"({"model":"simulated-llm","messages":[{"role":"user","content":"tell me about the cache"}],"stream":true})";
  const json::value body = json::parse(text);
  const std::string frame =
      R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" the"}}]})"
      "\n\n";
  std::string route = "/v1/chat/completions";

  counted_heap::start_counting();
  RequestRecorder::Request request = recorder.arrive(std::move(route), std::move(headers));
  recorder.accept(request, std::move(text), body);
  recorder.first_token(request);
  for (int i = 0; i < 18; ++i) recorder.sent(request, frame);
  recorder.finish(request, jsonl::recording::Outcome::completed, jsonl::recording::EngineReport{.request_id = 7});
  counted_heap::stop_counting();

  // The trace id, its copy for the request line, and the frames' one buffer.
  BOOST_TEST(counted_heap::allocations() <= 3u);
}

BOOST_AUTO_TEST_SUITE_END()
