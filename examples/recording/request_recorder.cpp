// Headers before the modules: no #include may follow an import.
#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <ctime>
#include <sstream>
#include <vector>

#include "request_recorder.hpp"

import jsonl.perf_metrics;
import jsonl.request_trace;

namespace jsonl_recording {
namespace {

namespace json = boost::json;
using TraceWriter = jsonl::RequestTraceWriter<json::value>;

std::int64_t microseconds(std::chrono::system_clock::time_point at) {
  return std::chrono::floor<std::chrono::microseconds>(at).time_since_epoch().count();
}

const char* status_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::completed:
      return "completed";
    case Outcome::client_disconnected:
      return "client_disconnected";
    case Outcome::error:
      break;
  }
  return "error";
}

// The session a request's lines are stamped with: the client's own conversation id,
// from the body's conversation_params or the usual session headers, sanitized.
std::string session_of(const Headers& headers, const json::value& body) {
  if (const json::object* object = body.if_object()) {
    if (const json::value* params = object->if_contains("conversation_params")) {
      if (const json::object* fields = params->if_object()) {
        if (const json::value* id = fields->if_contains("conversation_id"); id && id->is_string()) {
          return jsonl::sanitize_session_key(id->get_string());
        }
      }
    }
  }
  for (const auto& [name, value] : headers) {
    std::string lowered(name);
    for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lowered == "x-session-id" || lowered == "x-conversation-id") return jsonl::sanitize_session_key(value);
  }
  return jsonl::sanitize_session_key("");
}

}  // namespace

struct RequestRecorder::Writers {
  Writers(const RecorderOptions& options)
      : perf(perf_options(options)), traces(trace_options(options), jsonl::process_suffix()) {}

  static jsonl::WriterOptions perf_options(const RecorderOptions& options) {
    jsonl::WriterOptions result = jsonl::perf_metrics_options(*options.output_dir / "perf_metrics", options.server_kind);
    result.durability.enabled = options.durable_perf_metrics;
    if (options.zstd_level) result.compression = jsonl::Compression::zstd(*options.zstd_level);
    return result;
  }
  static jsonl::WriterOptions trace_options(const RecorderOptions& options) {
    jsonl::WriterOptions result = jsonl::request_trace_options(*options.output_dir / "request_trace");
    result.durability.enabled = options.durable_traces;
    if (options.zstd_level) result.compression = jsonl::Compression::zstd(*options.zstd_level);
    return result;
  }

  // A request line whose body is moved in last, not copied.
  void submit_request(json::object line, json::value body, std::chrono::system_clock::time_point made_at) {
    line.emplace("body", std::move(body));
    submit_trace(jsonl::trace_requests, std::move(line), made_at);
  }

  void submit_trace(std::string_view kind, json::object line, std::chrono::system_clock::time_point made_at) {
    if (traces.submit(jsonl::TraceRecord<json::value>(std::string(kind), json::value(std::move(line)), made_at))) {
      (kind == jsonl::trace_requests ? requests_traced : responses_traced).fetch_add(1, std::memory_order_relaxed);
    }
  }

  jsonl::TypedPerfMetricsJsonlWriter perf;
  TraceWriter traces;
  bool running = false;
  std::atomic<std::uint64_t> requests_traced{0};
  std::atomic<std::uint64_t> responses_traced{0};
  std::atomic<std::uint64_t> perf_records{0};
};

RequestRecorder::RequestRecorder(RecorderOptions options)
    : server_kind_(options.server_kind), engine_id_as_disagg_request_id_(options.engine_id_as_disagg_request_id) {
  if (options.output_dir) writers_ = std::make_unique<Writers>(options);
}

RequestRecorder::~RequestRecorder() { close(); }

bool RequestRecorder::start() {
  if (!writers_) return true;
  writers_->perf.start();
  writers_->traces.start();
  writers_->running = writers_->perf.path().has_value() && writers_->traces.path().has_value();
  return writers_->running;
}

void RequestRecorder::close() {
  if (!writers_) return;
  writers_->perf.close();
  writers_->traces.close();
}

RequestRecorder::Request RequestRecorder::arrive(std::string route, Headers headers) const {
  Request request;
  request.server_arrival_time_ = steady_seconds();
  request.route_ = std::move(route);
  request.headers_ = std::move(headers);
  return request;
}

void RequestRecorder::accept(Request& request, json::value body) const {
  request.accepted_ = true;
  if (!writers_) return;
  request.trace_id_ = jsonl::make_trace_id();
  request.session_ = session_of(request.headers_, body);
  const auto now = std::chrono::system_clock::now();
  // Both stamps lead the line, ahead of the headers and the body: a reader finds them
  // in its first characters whatever the body's size.
  writers_->submit_request(
                         {{"event", "request"},
                          {"trace_id", request.trace_id_},
                          {"session", request.session_},
                          {"recorded_at", iso_utc(microseconds(now))},
                          {"server_arrival_time", request.server_arrival_time_},
                          {"route", request.route_},
                          {"status", "accepted"},
                          {"headers", jsonl::headers_json(request.headers_)}},
                         std::move(body), now);
}

void RequestRecorder::reject(Request& request, json::value body, json::array errors,
                             std::optional<std::string> parse_error) const {
  request.finished_ = true;
  if (!writers_) return;
  const auto now = std::chrono::system_clock::now();
  json::object line{{"event", "request"},
                    {"trace_id", jsonl::make_trace_id()},
                    {"session", session_of(request.headers_, body)},
                    {"recorded_at", iso_utc(microseconds(now))},
                    {"server_arrival_time", request.server_arrival_time_},
                    {"route", request.route_},
                    {"status", "rejected_400"},
                    {"headers", jsonl::headers_json(request.headers_)}};
  line.emplace("body", std::move(body));
  line.emplace("validation_errors", std::move(errors));
  if (parse_error) line.emplace("body_parse_error", *parse_error);
  writers_->submit_trace(jsonl::trace_requests, std::move(line), now);
}

void RequestRecorder::first_token(Request& request) const {
  if (!request.server_first_token_time_) request.server_first_token_time_ = steady_seconds();
}

void RequestRecorder::sent(Request& request, std::string_view frame) const {
  request.streamed_ = true;
  if (writers_) request.frames_.append(frame);
}

void RequestRecorder::finish(Request& request, Outcome outcome, const EngineReport& engine,
                             std::optional<json::value> payload, std::optional<Termination> termination) const {
  if (!request.accepted_ || request.finished_) return;
  request.finished_ = true;
  if (!writers_) return;
  const auto now = std::chrono::system_clock::now();
  json::object line{{"event", "response"},
                    {"trace_id", request.trace_id_},
                    {"session", request.session_},
                    {"finished_at", iso_utc(microseconds(now))},
                    {"status", status_name(outcome)},
                    {"client_id", engine.request_id},
                    {"disagg_request_id", engine_id_as_disagg_request_id_ ? json::value(engine.request_id) : json::value()},
                    {"ctx_request_id", nullptr}};
  if (termination) line["termination"] = {{"cause", termination->cause}, {"detail", termination->detail}};
  if (payload && !request.streamed_) {
    line["response"] = {{"kind", "json"}, {"body", std::move(*payload)}};
  } else {
    line["response"] = {{"kind", "sse_text"}, {"body", std::move(request.frames_)}};
  }
  writers_->submit_trace(jsonl::trace_responses, std::move(line), now);
  if (outcome != Outcome::completed) return;  // an engine reports the requests it finished

  // Not streamed: the first token reached the client with the last, now.
  if (!request.server_first_token_time_) request.server_first_token_time_ = steady_seconds();
  jsonl::perf::TimingMetrics timing{.arrival_time = engine.arrival_time,
                                    .first_scheduled_time = engine.first_scheduled_time,
                                    .first_token_time = engine.first_token_time,
                                    .last_token_time = engine.last_token_time,
                                    .server_arrival_time = request.server_arrival_time_,
                                    .server_first_token_time = request.server_first_token_time_};
  const std::int64_t looked_up = engine.reused_blocks + engine.missed_blocks;
  jsonl::perf::PhaseMetrics phase{
      .first_iter = engine.first_iter,
      .last_iter = engine.last_iter,
      .timing_metrics = timing,
      .kv_cache_metrics = jsonl::perf::KvCacheMetrics{
          .num_total_allocated_blocks = engine.total_blocks,
          .num_new_allocated_blocks = engine.new_blocks,
          .num_reused_blocks = engine.reused_blocks,
          .num_missed_blocks = engine.missed_blocks,
          .kv_cache_hit_rate = looked_up == 0 ? 0.0 : double(engine.reused_blocks) / double(looked_up)}};
  jsonl::perf::PerfMetricsRecord record{.request_id = engine.request_id, .phases = {.server = std::move(phase)}};
  if (writers_->perf.submit(std::move(record))) writers_->perf_records.fetch_add(1, std::memory_order_relaxed);
}

RecorderCounts RequestRecorder::counts() const {
  if (!writers_) return {};
  return {writers_->requests_traced.load(), writers_->responses_traced.load(), writers_->perf_records.load()};
}

std::string RequestRecorder::metrics_text() const {
  if (!writers_) return {};
  const std::vector<jsonl::MetricLabel> labels{{"server_kind", server_kind_}};
  const std::vector<jsonl::WriterMetrics> writers{
      {writers_->perf.stats(), std::string(jsonl::perf_metrics_subject), labels},
      {writers_->traces.stats(), std::string(jsonl::request_trace_subject), labels}};
  return jsonl::prometheus_text(writers);
}

std::string RequestRecorder::accounting_line() const {
  if (!writers_) return "recording off";
  std::ostringstream line;
  const auto describe = [&](std::string_view name, const jsonl::WriterStats& stats) {
    line << name << ": submitted " << stats.submitted << ", written " << stats.written << ", unknown "
         << stats.unknown << ", dropped " << stats.dropped();
  };
  describe("perf metrics", writers_->perf.stats());
  line << "; ";
  describe("request traces", writers_->traces.stats());
  return line.str();
}

std::string iso_utc(std::int64_t microseconds_since_epoch) {
  const std::int64_t micros = ((microseconds_since_epoch % 1'000'000) + 1'000'000) % 1'000'000;
  const std::time_t seconds = static_cast<std::time_t>((microseconds_since_epoch - micros) / 1'000'000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[48];
  std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  if (micros != 0) length += std::snprintf(text + length, sizeof text - length, ".%06lld", static_cast<long long>(micros));
  return std::string(text, length) + "+00:00";
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace jsonl_recording
