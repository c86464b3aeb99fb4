// Writes a few performance-metrics records (one malformed) through an installed jsonl, and
// records one request through its recording layer, then checks the files and the
// counters. Exit status 0 when all is as expected.
#include <boost/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

import jsonl.writer;
import jsonl.perf_metrics;
import jsonl.request_trace;
import jsonl.recording;

int main(int argc, char** argv) {
  const std::filesystem::path directory = argc > 1 ? argv[1] : "consumer_out";
  jsonl::PerfMetricsJsonlWriter writer(directory, "server");
  writer.start();
  for (int id = 1; id <= 3; ++id) {
    writer.submit(boost::json::object{
        {"request_id", std::to_string(id)},
        {"phases", boost::json::object{{"server", boost::json::object{{"first_iter", id}}}}}});
  }
  writer.submit(boost::json::object{{"request_id", "4"}});  // no phases: malformed
  writer.close();

  jsonl::RequestTraceWriter<> traces(directory / "traces", "-consumer");
  traces.start();
  traces.submit({std::string(jsonl::trace_requests), boost::json::object{{"trace_id", jsonl::make_trace_id()}}});
  traces.close();

  jsonl::recording::RequestRecorder recorder({.output_dir = directory / "recording"});
  recorder.start();
  jsonl::recording::RequestRecorder::Request request = recorder.arrive("/v1/completions", {{"x-session-id", "one"}});
  const std::string body = R"({"model":"m","prompt":"hi"})";
  recorder.accept(request, body, boost::json::parse(body));
  recorder.finish(request, jsonl::recording::Outcome::completed, jsonl::recording::EngineReport{.request_id = 1});
  recorder.close();

  const jsonl::WriterStats stats = writer.stats();
  std::ifstream file(*writer.path());
  std::string line;
  int lines = 0;
  while (std::getline(file, line)) ++lines;
  const bool ok = stats.written == 3 && stats.dropped(jsonl::DropReason::malformed) == 1 && lines == 3 &&
                  writer.dropped_records() == 1 && jsonl::to_json_text(boost::json::value(1.0)) == "1.0" &&
                  traces.stats().written == 1 &&
                  recorder.accounting_line() ==
                      "perf metrics: submitted 1, written 1, unknown 0, dropped 0; "
                      "request traces: submitted 2, written 2, unknown 0, dropped 0";
  std::cout << (ok ? "consumer OK: " : "consumer FAILED: ") << lines << " lines in "
            << writer.path()->string() << '\n';
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
