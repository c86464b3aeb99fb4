// The model's handler (roles server, context and generation): the simulated model's
// plan, its tokens at the plan's pace, streamed or sent whole, and the engine's report.
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <utility>

#include "library_names.hpp"
#include "traced_request.hpp"

namespace jsonl_perf::serve {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

SteadyTime steady_time(double seconds) {
  return SteadyTime(std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds)));
}

class ModelRequest final : public TracedRequest {
 public:
  ModelRequest(ServerContext& server, Route route, jsonl::recording::Headers headers)
      : TracedRequest(server, route, std::move(headers), 500) {}

  void cancel() override {
    if (timer_) timer_->cancel();
  }

 private:
  void begin(json::value body) override;
  void record_end(Outcome outcome, std::optional<Termination> termination, std::optional<json::value> payload) override;
  void schedule_next_token();
  void produce_token();
  void after_token();
  json::value whole_answer();
  MetricFields worker_metrics();

  std::optional<net::steady_timer> timer_;
  Plan plan_;
  std::optional<Answer> answer_;
  double engine_arrival_ = 0;
  double scheduled_ = 0;
  std::optional<double> first_token_;
  std::optional<double> last_token_;
  std::size_t next_token_ = 0;
};

void ModelRequest::begin(json::value) {
  timer_.emplace(exchange_->executor());
  const HopType hop = disagg_ ? disagg_->request_type : HopType::context_and_generation;
  plan_ = server_.model().plan(shape_.prompt_bytes, shape_.max_tokens, hop);
  const bool include_usage = shape_.stream_options_given ? shape_.include_usage : server_.recorder().recording();
  answer_.emplace(route_, shape_.model, plan_.prompt_tokens, plan_.cached_tokens, include_usage, shape_.continuous_usage);
  engine_arrival_ = jsonl::recording::steady_seconds();
  scheduled_ = engine_arrival_ + plan_.queue_seconds;
  if (!shape_.stream) return schedule_next_token();
  begin_stream([this] {
    std::string opening = answer_->stream_opening();
    if (opening.empty()) return schedule_next_token();
    send_frame(std::move(opening), true, [this] { schedule_next_token(); });
  });
}

void ModelRequest::schedule_next_token() {
  const double due = next_token_ == 0 ? scheduled_ + plan_.first_token_seconds : *last_token_ + plan_.token_gaps[next_token_ - 1];
  timer_->expires_at(steady_time(due));
  timer_->async_wait(guard([this](beast::error_code error) {
    if (error) return finish(Outcome::error, Termination{"server_shutdown", "the server stopped before the answer ended"});
    produce_token();
  }));
}

void ModelRequest::produce_token() {
  const double now = jsonl::recording::steady_seconds();
  if (!first_token_) {
    first_token_ = now;
    server_.recorder().first_token(record_);
  }
  last_token_ = now;
  const std::string& token = plan_.tokens[next_token_++];
  if (shape_.stream) return send_frame(answer_->stream_token(token), true, [this] { after_token(); });
  answer_->add_token(token);
  if (next_token_ < plan_.tokens.size()) return schedule_next_token();
  respond_and_finish(whole_answer(), return_metrics_ ? worker_metrics() : MetricFields{});
}

// After a streamed token: the next, or the closing frames, the worker's metrics event
// when asked for (not part of the answer, so not recorded) and the end.
void ModelRequest::after_token() {
  if (next_token_ < plan_.tokens.size()) return schedule_next_token();
  send_frame(answer_->stream_closing(plan_.finish_reason), true, [this] {
    if (!return_metrics_) return end_stream();
    send_frame(metrics_event(worker_metrics()), false, [this] { end_stream(); });
  });
}

// The answer sent whole; a context worker's carries what the generation worker needs.
json::value ModelRequest::whole_answer() {
  json::value body = answer_->body(plan_.finish_reason);
  if (disagg_ && disagg_->request_type == HopType::context_only) {
    DisaggregatedParams handed = *disagg_;
    handed.ctx_request_id = plan_.request_id;
    handed.first_gen_tokens = json::array{plan_.first_token_id};
    body.at("choices").at(0).as_object()["disaggregated_params"] = params_json(handed);
  }
  return body;
}

MetricFields ModelRequest::worker_metrics() {
  const double offset = server_.recorder().steady_clock_offset();
  const jsonl::recording::EngineReport report =
      server_.model().report(plan_, engine_arrival_, scheduled_, first_token_, last_token_);
  const auto shifted = [offset](std::optional<double> time) { return time ? std::optional(*time + offset) : time; };
  return metric_fields({.arrival_time = report.arrival_time + offset,
                        .first_scheduled_time = report.first_scheduled_time + offset,
                        .first_token_time = shifted(report.first_token_time),
                        .last_token_time = shifted(report.last_token_time),
                        .kv_cache_transfer_start = shifted(report.kv_cache_transfer_start),
                        .kv_cache_transfer_end = shifted(report.kv_cache_transfer_end)});
}

void ModelRequest::record_end(Outcome outcome, std::optional<Termination> termination, std::optional<json::value> payload) {
  jsonl::recording::EngineReport report = server_.model().report(plan_, engine_arrival_, scheduled_, first_token_, last_token_);
  if (disagg_) {
    report.disagg_request_id = disagg_->disagg_request_id;
    report.ctx_request_id =
        disagg_->request_type == HopType::context_only ? std::optional(plan_.request_id) : disagg_->ctx_request_id;
  }
  server_.recorder().finish(record_, outcome, report, std::move(payload), std::move(termination));
}

}  // namespace

std::shared_ptr<RequestHandler> model_request(ServerContext& server, Route route, jsonl::recording::Headers headers) {
  return std::make_shared<ModelRequest>(server, route, std::move(headers));
}

}  // namespace jsonl_perf::serve
