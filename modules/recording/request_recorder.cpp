module;

#include <boost/json.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

module jsonl.recording;

import :python_text;

namespace jsonl::recording {

namespace json = boost::json;

namespace {

// Whether the engine finished the request, which its perf record says: it did for one
// whose answer was then not converted.
bool engine_finished(Outcome outcome) { return outcome == Outcome::completed || outcome == Outcome::conversion_error; }

}  // namespace

RequestRecorder::RequestRecorder(RecorderOptions options, std::unique_ptr<RecordingDestination> destination)
    : destination_(std::move(destination)),
      engine_id_as_disagg_request_id_(options.engine_id_as_disagg_request_id),
      traces_(options.traces) {
  if (!destination_ && options.output_dir) destination_ = jsonl_writers(options);
}

RequestRecorder::~RequestRecorder() { close(); }

bool RequestRecorder::start() {
  if (!destination_ || started_) return true;
  started_ = true;
  return destination_->start();
}

void RequestRecorder::close() {
  if (destination_ && started_ && !closed_) destination_->close();
  closed_ = true;
}

// The request line, as far as accept() and reject() share it.
// The headers and route move into it: nothing after the request line reads them.
RequestLine RequestRecorder::request_line(Request& request, std::string trace_id, std::string session,
                                          std::string_view status, std::string body) {
  return {.trace_id = std::move(trace_id),
          .session = std::move(session),
          .recorded_at = std::chrono::system_clock::now(),
          .server_arrival_time = request.server_arrival_time_,
          .route = std::move(request.route_),
          .status = status,
          .headers = std::move(request.headers_),
          .body = std::move(body)};
}

RequestRecorder::Request RequestRecorder::arrive(std::string route, Headers headers) const {
  Request request;
  request.server_arrival_time_ = steady_seconds();
  request.route_ = std::move(route);
  request.headers_ = std::move(headers);
  for (auto& [name, value] : request.headers_) {
    for (char& c : name) c = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return request;
}

void RequestRecorder::accept(Request& request, std::string body, const json::value& parsed) const {
  request.accepted_ = true;
  if (!destination_ || !traces_) return;
  request.trace_id_ = make_trace_id();
  request.session_ = session_of(request.headers_, parsed);
  hand_over(request_line(request, request.trace_id_, request.session_, "accepted", std::move(body)));
}

void RequestRecorder::reject(Request& request, std::string body, const json::value& parsed, json::array errors) const {
  reject_line(request, std::move(body), parsed, std::move(errors), std::nullopt);
}

void RequestRecorder::reject_unparsed(Request& request, std::string body, std::string parse_error,
                                      json::array errors) const {
  reject_line(request, std::move(body), json::value(), std::move(errors), std::move(parse_error));
}

void RequestRecorder::reject_line(Request& request, std::string body, const json::value& parsed, json::array errors,
                                  std::optional<std::string> parse_error) const {
  request.finished_ = true;
  if (!destination_ || !traces_) return;
  std::string session = session_of(request.headers_, parsed);
  RequestLine line = request_line(request, make_trace_id(), std::move(session), "rejected_400", std::move(body));
  line.validation_errors = brief_validation_errors(errors);
  line.body_parse_error = std::move(parse_error);
  hand_over(std::move(line));
}

void RequestRecorder::first_token(Request& request) const {
  if (!request.server_first_token_time_) request.server_first_token_time_ = steady_seconds();
}

void RequestRecorder::sent(Request& request, std::string_view frame) const {
  request.streamed_ = true;
  if (!destination_ || !traces_) return;
  // A stream's frames come to a few KiB: room for them at once, not a doubling a frame.
  if (request.frames_.empty()) request.frames_.reserve(Request::frames_room);
  request.frames_.append(frame);
}

bool RequestRecorder::respond(Request& request, Outcome outcome, json::value client_id, json::value disagg_request_id,
                              json::value ctx_request_id, std::optional<json::value> payload,
                              std::optional<Termination> termination) const {
  if (!request.accepted_ || request.finished_) return false;
  request.finished_ = true;
  if (!destination_) return false;
  // Not streamed: the first token reached the client with the last, now.
  if (!request.server_first_token_time_) request.server_first_token_time_ = steady_seconds();
  if (!traces_) return true;
  ResponseLine line{.trace_id = std::move(request.trace_id_),
                    .session = std::move(request.session_),
                    .finished_at = std::chrono::system_clock::now(),
                    .status = outcome,
                    .client_id = std::move(client_id),
                    .disagg_request_id = std::move(disagg_request_id),
                    .ctx_request_id = std::move(ctx_request_id),
                    .termination = std::move(termination)};
  if (!request.streamed_) {
    line.whole_answer = payload ? std::move(*payload) : json::value();
  } else {
    line.frames = std::move(request.frames_);
  }
  hand_over(std::move(line));
  return true;
}

void RequestRecorder::finish(Request& request, Outcome outcome, const EngineReport& engine,
                             std::optional<json::value> payload, std::optional<Termination> termination) const {
  const json::value disagg_id = engine.disagg_request_id ? json::value(*engine.disagg_request_id)
                                : engine_id_as_disagg_request_id_ ? json::value(engine.request_id)
                                                                  : json::value();
  const json::value ctx_id = engine.ctx_request_id ? json::value(*engine.ctx_request_id) : json::value();
  if (!respond(request, outcome, engine.request_id, disagg_id, ctx_id, std::move(payload), std::move(termination)) ||
      !engine_finished(outcome)) {
    return;  // an engine reports the requests it finished
  }
  // Every steady-clock time of the record moves onto the proxy's clock.
  const double offset = steady_clock_offset();
  const auto shifted = [offset](std::optional<double> time) { return time ? std::optional(*time + offset) : time; };
  perf::TimingMetrics timing{.arrival_time = engine.arrival_time + offset,
                                    .first_scheduled_time = engine.first_scheduled_time + offset,
                                    .first_token_time = shifted(engine.first_token_time),
                                    .last_token_time = shifted(engine.last_token_time),
                                    .kv_cache_transfer_start = shifted(engine.kv_cache_transfer_start),
                                    .kv_cache_transfer_end = shifted(engine.kv_cache_transfer_end),
                                    .kv_cache_size = engine.kv_cache_size,
                                    .server_arrival_time = request.server_arrival_time_ + offset,
                                    .server_first_token_time = shifted(request.server_first_token_time_)};
  const std::int64_t looked_up = engine.reused_blocks + engine.missed_blocks;
  perf::PhaseMetrics phase{
      .first_iter = engine.first_iter,
      .last_iter = engine.last_iter,
      .timing_metrics = timing,
      .kv_cache_metrics = perf::KvCacheMetrics{
          .num_total_allocated_blocks = engine.total_blocks,
          .num_new_allocated_blocks = engine.new_blocks,
          .num_reused_blocks = engine.reused_blocks,
          .num_missed_blocks = engine.missed_blocks,
          .kv_cache_hit_rate = looked_up == 0 ? 0.0 : double(engine.reused_blocks) / double(looked_up)}};
  perf::PerfMetricsRecord record{.request_id = engine.request_id, .phases = {.server = std::move(phase)}};
  if (engine.ctx_request_id) record.ctx_request_id = *engine.ctx_request_id;
  if (engine.disagg_request_id) record.disagg_request_id = *engine.disagg_request_id;
  hand_over(std::move(record));
}

void RequestRecorder::finish(Request& request, Outcome outcome, const ProxyReport& proxy,
                             std::optional<json::value> payload, std::optional<Termination> termination) const {
  const json::value ctx_id = proxy.ctx_request_id ? json::value(*proxy.ctx_request_id) : json::value();
  if (!respond(request, outcome, proxy.disagg_request_id, proxy.disagg_request_id, ctx_id, std::move(payload),
               std::move(termination)) ||
      !engine_finished(outcome)) {
    return;
  }
  // A hop's record as the reference's proxy makes it from the worker's metrics: the
  // proxy's id, and the times those fields carry.
  const auto hop = [&](const std::optional<HopTimes>& times) -> std::optional<perf::PhaseMetrics> {
    if (!times) return std::nullopt;
    return perf::PhaseMetrics{.request_id = proxy.disagg_request_id,
                                     .timing_metrics = perf::TimingMetrics{
                                         .arrival_time = times->arrival_time,
                                         .first_scheduled_time = times->first_scheduled_time,
                                         .first_token_time = times->first_token_time,
                                         .last_token_time = times->last_token_time}};
  };
  perf::PerfMetricsRecord record{
      .request_id = std::to_string(proxy.disagg_request_id),
      .phases = {.ctx = hop(proxy.ctx),
                 .gen = hop(proxy.gen),
                 .disagg = perf::DisaggPhase{
                     .ctx_server = proxy.ctx_server,
                     .gen_server = proxy.gen_server,
                     .timing_metrics = {.server_arrival_time = request.server_arrival_time_,
                                        .ctx_dispatch_time = proxy.ctx_dispatch_time,
                                        .server_first_token_time = *request.server_first_token_time_}}},
      .disagg_request_id = proxy.disagg_request_id};
  hand_over(std::move(record));
}

void RequestRecorder::hand_over(TraceLine line) const {
  bool taken = false;
  try {
    taken = destination_->trace(std::move(line));
  } catch (...) {
    // Counted below: a destination's fault is not the handler's.
  }
  if (!taken) refused_.fetch_add(1, std::memory_order_relaxed);
}

void RequestRecorder::hand_over(perf::PerfMetricsRecord record) const {
  bool taken = false;
  try {
    taken = destination_->perf(std::move(record));
  } catch (...) {
    // Counted below: a destination's fault is not the handler's.
  }
  if (!taken) refused_.fetch_add(1, std::memory_order_relaxed);
}

std::string RequestRecorder::accounting_line() const {
  if (!destination_) return "recording off";
  std::string line = destination_->accounting_line();
  if (const std::uint64_t count = refused()) line += "; refused by the destination: " + std::to_string(count);
  return line;
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace jsonl::recording
