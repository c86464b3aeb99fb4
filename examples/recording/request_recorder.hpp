// The recording layer of a serving process: what its request handlers call so that every
// request leaves the reference server's two streams, a perf-metrics record and a request
// and a response trace, joinable on the engine's request id.
//
// It knows nothing of HTTP or of the model. A handler calls, per request:
//
//   arrive(route, headers)        as the request's headers are read: stamps
//                                 server_arrival_time (steady clock, the clock of the
//                                 perf timings), before the body is read or parsed
//   accept(request, body)         once the body is parsed and valid: the request line,
//                                 status "accepted", recorded_at (wall clock) now
//   reject(request, body, errors) instead, when it is refused with 400: the request
//                                 line, status "rejected_400", no response line ever
//   first_token(request)          as the server has the first token (a stream sends it
//                                 then): server_first_token_time. finish() stamps it if no
//                                 call did, as the reference does for an answer sent whole;
//                                 stamped at the first token instead, an answer's decode
//                                 time (E2E less TTFT) is never below zero.
//   sent(request, frame)          for each streamed frame that went out, as sent
//   finish(request, outcome, ...) at the end (completed, client hung up, error): the
//                                 response line, finished_at now; and for a completed
//                                 request the perf record (an engine reports the requests
//                                 it finished)
//
// Thread-safety: one Request is used by one handler at a time; the recorder itself may be
// called from any thread. No call blocks on a file: each submits to a jsonl writer, which
// counts what it cannot take (its destination's writer_metrics()).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jsonl_recording {

class RecordingDestination;  // recording_destination.hpp
struct RequestLine;           // trace_lines.hpp

using Headers = std::vector<std::pair<std::string, std::string>>;

struct RecorderOptions {
  // perf_metrics/ and request_trace/ go under it, as a deployment's attempt directory
  // lays them out. Empty: the recorder is inert (every call does nothing).
  std::optional<std::filesystem::path> output_dir;
  std::string server_kind = "server";  // perf_metrics-<server_kind>-<host>-<pid>-<time>.jsonl
  bool traces = true;                  // request traces; a disaggregated deployment's workers
                                       // leave them to the proxy, which alone sees the client
  bool durable_traces = true;          // the reference's default for traces
  bool durable_perf_metrics = false;   // and for perf metrics
  std::optional<int> zstd_level;       // compressed files, both streams
  // Each writer's WriterOptions::linger: a server's records can wait a few ms for the
  // next, and each wake-up of a writer's thread costs the server's core more than the
  // record it writes.
  std::chrono::milliseconds linger{10};
  // Each writer's WriterOptions::hold_for: at a GPU server's rate a request's records
  // would otherwise pay a commit of their own (a wake-up of each writer's threads, an
  // append and, durable, an fsync per file); held, a commit carries the requests of that
  // long. At a high rate a batch fills first and nothing is held.
  std::chrono::milliseconds hold_for{250};
  // The nice value each writer's threads take as they start (WriterOptions::
  // on_thread_start). 0, the server's priority: at nice 19 on a core shared with busy
  // request threads the writers get too little of it to keep up, and their queues fill
  // and drop (the trace writer lost more than half its lines at two thirds of the core).
  int writer_nice = 0;
  // An aggregated server has no proxy to assign a disagg_request_id, and the reference's
  // server leaves it null there; but the reference's analysis joins a response line to
  // perf records on it alone (keying a record by its disagg_request_id, else its
  // request_id), so with that null it joins none. On: the response line's
  // disagg_request_id is the engine's request id, and the analysis joins each response
  // to its record. Off: null, the reference's bytes.
  bool engine_id_as_disagg_request_id = true;
};

// How a request ended, as the response line's status says it.
enum class Outcome { completed, client_disconnected, error };

// What the engine reports of a request at its end: its id (the perf record's request_id
// and the response line's client_id) and its own timings, seconds on the steady clock.
struct EngineReport {
  std::int64_t request_id = 0;
  double arrival_time = 0;
  double first_scheduled_time = 0;
  std::optional<double> first_token_time;  // empty: no token was produced
  std::optional<double> last_token_time;
  std::int64_t first_iter = 0;
  std::int64_t last_iter = 0;
  std::int64_t total_blocks = 0;
  std::int64_t new_blocks = 0;
  std::int64_t reused_blocks = 0;
  std::int64_t missed_blocks = 0;
  // A worker of a disaggregated deployment: the proxy's id and the context worker's
  // request id, from the request body's disaggregated_params (the context worker's own
  // id for a context_only request), carried into the record.
  std::optional<std::int64_t> disagg_request_id;
  std::optional<std::int64_t> ctx_request_id;
  // A generation worker's transfer of the context's KV cache; a size of 0: none.
  std::optional<double> kv_cache_transfer_start;
  std::optional<double> kv_cache_transfer_end;
  std::int64_t kv_cache_size = 0;
};

// One worker's hop as a disaggregated front end read it from the worker's metrics
// (its Server-Timing and X-TRTLLM-Start-End-Time fields), on the proxy's steady clock.
struct HopTimes {
  std::optional<double> arrival_time;
  std::optional<double> first_scheduled_time;
  std::optional<double> first_token_time;
  std::optional<double> last_token_time;
};

// What a disaggregated front end reports of a request at its end.
struct ProxyReport {
  std::int64_t disagg_request_id = 0;
  std::optional<std::int64_t> ctx_request_id;  // the context worker's, from its answer
  std::string ctx_server;                      // host:port of each hop's worker; "" for none
  std::string gen_server;
  double ctx_dispatch_time = 0;
  std::optional<HopTimes> ctx;  // empty: that worker sent no metrics (or was not asked)
  std::optional<HopTimes> gen;
};

// Why a stream stopped, when it did not complete: the response line's "termination".
struct Termination {
  std::string cause;
  std::string detail;
};

class RequestRecorder {
 public:
  // One request's state, owned by its handler from arrive() to finish().
  class Request {
   private:
    friend class RequestRecorder;
    std::string route_;
    Headers headers_;
    double server_arrival_time_ = 0;
    std::optional<double> server_first_token_time_;
    std::string trace_id_;
    std::string session_;
    std::string frames_;
    static constexpr std::size_t frames_room = 4096;
    bool streamed_ = false;
    bool accepted_ = false;
    bool finished_ = false;
  };

  // Records into `destination`; by default (null), into this project's writers under
  // options.output_dir, or nowhere when it is empty.
  explicit RequestRecorder(RecorderOptions options, std::unique_ptr<RecordingDestination> destination = nullptr);
  ~RequestRecorder();
  RequestRecorder(const RequestRecorder&) = delete;
  RequestRecorder& operator=(const RequestRecorder&) = delete;

  // Starts the destination (for the writers: their directories and threads). False when
  // it cannot record (it logged why). Once; not thread-safe with the calls below.
  bool start();
  // Writes what is queued (the writers: waiting at most their shutdown timeouts). Once,
  // after the last request's calls.
  void close();

  Request arrive(std::string route, Headers headers) const;
  void accept(Request& request, boost::json::value body) const;
  // `body`: the parsed body, or its text (invalid UTF-8 replaced) when it did not parse,
  // with `parse_error` saying why. `errors`: [{"loc": [...], "type": ..., "msg": ...}].
  void reject(Request& request, boost::json::value body, boost::json::array errors,
              std::optional<std::string> parse_error = std::nullopt) const;
  void first_token(Request& request) const;
  void sent(Request& request, std::string_view frame) const;
  // Once per accepted request (later calls do nothing). `payload`: the JSON body sent, for
  // a response that was not streamed; a streamed one records its frames as sent.
  void finish(Request& request, Outcome outcome, const EngineReport& engine,
              std::optional<boost::json::value> payload = std::nullopt,
              std::optional<Termination> termination = std::nullopt) const;
  // The same for a disaggregated front end: the response line names the proxy's id (its
  // client_id and disagg_request_id) and the context worker's; a completed request's
  // record is the proxy's (perf_metrics-disagg-*), with each hop's times.
  void finish(Request& request, Outcome outcome, const ProxyReport& proxy,
              std::optional<boost::json::value> payload = std::nullopt,
              std::optional<Termination> termination = std::nullopt) const;

  // Seconds added to every steady-clock time of a worker's perf records: a proxy on
  // another host lines its workers' clocks up with its own (POST /steady_clock_offset).
  void set_steady_clock_offset(double seconds) const { steady_clock_offset_.store(seconds); }
  double steady_clock_offset() const { return steady_clock_offset_.load(); }

  // Whether anything is recorded.
  bool recording() const { return destination_ != nullptr; }
  // Where it records; null when nothing is recorded.
  const RecordingDestination* destination() const { return destination_.get(); }
  // Whether every record submitted is written, unknown or dropped for a named reason,
  // and what each writer says of it (for a log line at exit).
  std::string accounting_line() const;

 private:
  // Writes the response line; false when the request was already finished or not accepted.
  bool respond(Request& request, Outcome outcome, boost::json::value client_id, boost::json::value disagg_request_id,
               boost::json::value ctx_request_id, std::optional<boost::json::value> payload,
               std::optional<Termination> termination) const;
  static RequestLine request_line(Request& request, std::string trace_id, std::string session, std::string_view status,
                                  boost::json::value body);

  std::unique_ptr<RecordingDestination> destination_;
  bool engine_id_as_disagg_request_id_;
  bool traces_;
  mutable std::atomic<double> steady_clock_offset_{0};
  bool started_ = false;
  bool closed_ = false;
};

// "2026-09-03T14:05:09.123456+00:00", as Python's datetime.isoformat() writes a UTC
// time (no fraction when the microseconds are 0).
std::string iso_utc(std::int64_t microseconds_since_epoch);

// Seconds on the steady clock: the clock of server_arrival_time and the perf timings.
double steady_seconds();

}  // namespace jsonl_recording
