// What the recording layer's tests record into: a destination that keeps every line and
// record it is handed, or refuses them. Imports jsonl.recording: include it last.
#pragma once

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

import jsonl.recording;

namespace recording_test {

namespace json = boost::json;
using namespace jsonl::recording;

// What a destination was handed, in order, as one list per stream.
struct Handed {
  std::mutex mutex;
  std::vector<TraceLine> lines;
  std::vector<jsonl::perf::PerfMetricsRecord> records;

  // The lines as json.dumps writes them, parsed back.
  std::vector<json::object> parsed_lines() {
    std::lock_guard lock(mutex);
    std::vector<json::object> parsed;
    for (const TraceLine& line : lines) {
      std::string text;
      append_trace_line(line, text);
      parsed.push_back(json::parse(text).as_object());
    }
    return parsed;
  }
};

// Keeps what it is handed, in `handed`; or, refusing, takes nothing: says so, or throws.
class Keeping final : public RecordingDestination {
 public:
  enum class Refuse { never, by_saying_so, by_throwing };

  explicit Keeping(std::shared_ptr<Handed> handed, Refuse refuse = Refuse::never)
      : handed_(std::move(handed)), refuse_(refuse) {}

  bool start() override { return true; }
  void close() override {}
  bool trace(TraceLine line) override {
    if (!take()) return false;
    std::lock_guard lock(handed_->mutex);
    handed_->lines.push_back(std::move(line));
    return true;
  }
  bool perf(jsonl::perf::PerfMetricsRecord record) override {
    if (!take()) return false;
    std::lock_guard lock(handed_->mutex);
    handed_->records.push_back(std::move(record));
    return true;
  }
  std::vector<jsonl::WriterMetrics> writer_metrics() const override { return {}; }
  std::string accounting_line() const override { return "kept"; }

 private:
  bool take() const {
    if (refuse_ == Refuse::by_throwing) throw std::runtime_error("this destination throws");
    return refuse_ == Refuse::never;
  }

  std::shared_ptr<Handed> handed_;
  Refuse refuse_;
};

// A recorder over a Keeping destination, started.
inline std::unique_ptr<RequestRecorder> keeping_recorder(std::shared_ptr<Handed> handed, RecorderOptions options = {},
                                                         Keeping::Refuse refuse = Keeping::Refuse::never) {
  auto recorder = std::make_unique<RequestRecorder>(std::move(options), std::make_unique<Keeping>(handed, refuse));
  if (!recorder->start()) throw std::runtime_error("the keeping destination did not start");
  return recorder;
}

// A line's text, as a writer writes it (without its newline).
inline std::string text_of(const TraceLine& line) {
  std::string text;
  append_trace_line(line, text);
  return text;
}

inline const std::string chat_text =
    R"({"model":"simulated-llm","messages":[{"role":"user","content":"caf\u00e9?"}],"stream":true})";
inline const json::value chat_body = json::parse(chat_text);

inline const Headers chat_headers{{"host", "127.0.0.1:8000"}, {"content-type", "application/json"},
                                  {"authorization", "Bearer sk-a-credential"}, {"x-session-id", "conv 7/a"}};

// One accepted chat request, streamed `frames` frames, finished as `outcome`.
inline void streamed_request(const RequestRecorder& recorder, std::int64_t engine_id, int frames = 2,
                             Outcome outcome = Outcome::completed) {
  RequestRecorder::Request request = recorder.arrive("/v1/chat/completions", chat_headers);
  recorder.accept(request, chat_text, chat_body);
  recorder.first_token(request);
  for (int i = 0; i < frames; ++i) recorder.sent(request, "data: {\"n\":" + std::to_string(i) + "}\n\n");
  recorder.finish(request, outcome, EngineReport{.request_id = engine_id, .arrival_time = 1, .first_scheduled_time = 2});
}

}  // namespace recording_test
