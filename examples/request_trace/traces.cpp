// Request traces as the reference's server writes them: a request line and a response
// line, in files per UTC hour and kind under DIR (default "traces_out"), durable, with
// the writer's books beside them. Exit 0 when both were persisted.
#include <boost/json.hpp>

#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

import jsonl.writer;
import jsonl.request_trace;

int main(int argc, char** argv) {
  const std::optional<std::filesystem::path> trace_dir =
      argc > 1 ? std::optional<std::filesystem::path>(argv[1]) : std::filesystem::path("traces_out");
  const std::vector<std::pair<std::string, std::string>> headers{{"content-type", "application/json"},
                                                                 {"authorization", "Bearer sk-secret"}};
  const std::string session_header = "user 42";
  const boost::json::value body = boost::json::parse(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
  // docs:begin traces
  jsonl::RequestTraceWriter<> traces(trace_dir);  // no directory: the writer is inert
  traces.start();  // INFO "Recording request traces to <dir>"
  const std::string trace_id = jsonl::make_trace_id();
  traces.submit({std::string(jsonl::trace_requests),
                 boost::json::object{{"trace_id", trace_id},
                                     {"session", jsonl::sanitize_session_key(session_header)},  // "user_42"
                                     {"headers", jsonl::headers_json(headers)},  // authorization: "[redacted]"
                                     {"body", body}}});
  traces.submit({std::string(jsonl::trace_responses), boost::json::object{{"trace_id", trace_id}, {"status", "completed"}}});
  traces.close();  // <dir>/<UTC hour>/requests-<pid>.jsonl, responses-<pid>.jsonl, _writer/
  // docs:end traces
  const jsonl::WriterStats stats = traces.stats();
  const bool ok = stats.written == 2 && stats.unknown == 0;
  std::cout << (ok ? "traces: both lines persisted\n" : "traces: FAILED\n");
  return ok ? 0 : 1;
}
