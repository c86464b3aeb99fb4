// A toy server's request loop recording each request through jsonl.recording: the calls a
// real handler makes, at the points it makes them. Records into DIR (default
// "toy_server_out"): perf_metrics/ and request_trace/<hour>/, as the reference's server.
#include <boost/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

import jsonl.recording;

namespace recording = jsonl::recording;

int main(int argc, char** argv) {
  // docs:begin start
  recording::RequestRecorder recorder({.output_dir = argc > 1 ? argv[1] : "toy_server_out"});
  if (!recorder.start()) return EXIT_FAILURE;  // it logged why
  // docs:end start

  const std::vector<std::string> prompts{"tell me about caches", "", "why batch requests"};
  std::int64_t next_engine_id = 1;
  for (const std::string& prompt : prompts) {
    // docs:begin handler
    // Headers read: server_arrival_time (steady clock) is stamped before the body is parsed.
    recording::RequestRecorder::Request request =
        recorder.arrive("/v1/completions", {{"content-type", "application/json"}, {"x-session-id", "toy"}});
    // The body as a client sends it, and as the handler parses it.
    std::string text = boost::json::serialize(boost::json::object{{"model", "toy"}, {"prompt", prompt}, {"stream", true}});
    const boost::json::value body = boost::json::parse(text);
    if (prompt.empty()) {  // refused with 400: a "rejected_400" request line, never a response line
      // (reject_unparsed for a body that is not JSON)
      recorder.reject(request, std::move(text), body,
                      boost::json::array{{{"loc", {"body", "prompt"}}, {"type", "missing"}, {"msg", "empty"}}});
      continue;
    }
    recorder.accept(request, std::move(text), body);  // an "accepted" line, recorded_at (wall clock)

    const double arrival = recording::steady_seconds();
    std::istringstream words(prompt);
    for (std::string word; words >> word;) {
      recorder.first_token(request);  // server_first_token_time: the first call only
      recorder.sent(request, "data: {\"text\":\"" + word + "\"}\n\n");
    }
    recorder.sent(request, "data: [DONE]\n\n");  // each SSE frame, as it went out
    const double done = recording::steady_seconds();
    // The response line and the perf record. A client that hung up:
    // Outcome::client_disconnected, a stream's with a Termination{cause, detail}.
    recorder.finish(request, recording::Outcome::completed,
                    recording::EngineReport{.request_id = next_engine_id++,
                                            .arrival_time = arrival,
                                            .first_scheduled_time = arrival,
                                            .first_token_time = arrival,
                                            .last_token_time = done});
    // docs:end handler
  }

  // docs:begin close
  recorder.close();  // at shutdown: both writers write what is queued
  std::cout << recorder.accounting_line() << '\n';
  // docs:end close
  return recorder.refused() == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
