// RequestRecorder: the calls a request handler makes, per request:
//
//   arrive(route, headers)        as the request's headers are read: stamps
//                                 server_arrival_time (steady clock, the clock of the
//                                 perf timings), before the body is read or parsed
//   accept(request, body, parsed) once the body is parsed and valid: the request line,
//                                 status "accepted", recorded_at (wall clock) now
//   reject(request, body, ...)    instead, when it is refused with 400 (reject_unparsed
//                                 when it is not JSON): the request line, status
//                                 "rejected_400", no response line ever
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
// counts what it cannot take (its destination's writer_metrics()); nothing a destination
// refuses or throws reaches the handler (refused() counts it).
module;

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

export module jsonl.recording:recorder;

import :reports;
import :trace_lines;
import jsonl.perf_metrics;
import :destination;

export namespace jsonl::recording {

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

  // `headers` as read, in order, repeats kept; their names are recorded in lower case,
  // as an ASGI server hands them to the reference's.
  Request arrive(std::string route, Headers headers) const;
  // `body`: the body's JSON text as it arrived, recorded as the value Python's json.loads
  // reads from it; `parsed`: that value as the handler parsed it, where the session is
  // looked up. The text moves to the writer, whose thread spells it.
  void accept(Request& request, std::string body, const boost::json::value& parsed) const;
  // `errors`: [{"loc": [...], "type": ..., "msg": ...}], as the response's detail has
  // them; recorded as the reference briefs them: each object's loc, type and msg only,
  // every part of loc as Python's str() spells it.
  void reject(Request& request, std::string body, const boost::json::value& parsed, boost::json::array errors) const;
  // A body that is not JSON: its text recorded as a string (invalid UTF-8 replaced),
  // with `parse_error` saying why.
  void reject_unparsed(Request& request, std::string body, std::string parse_error, boost::json::array errors) const;
  void first_token(Request& request) const;
  void sent(Request& request, std::string_view frame) const;
  // Once per accepted request (later calls do nothing). `payload`: the JSON body sent, for
  // a response that was not streamed (none: recorded as null); a streamed one records
  // its frames as sent.
  void finish(Request& request, Outcome outcome, const EngineReport& engine,
              std::optional<boost::json::value> payload = std::nullopt,
              std::optional<Termination> termination = std::nullopt) const;
  // The same for a disaggregated front end: the response line names the proxy's id (its
  // client_id and disagg_request_id) and the context worker's; a completed request's
  // record (or one whose answer was not converted) is the proxy's (perf_metrics-disagg-*),
  // with each hop's times.
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
  // The records the destination did not take: it said so, or threw (each is also in its
  // own accounting when it keeps one; a jsonl writer counts its drops by reason).
  std::uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  // Whether every record submitted is written, unknown or dropped for a named reason,
  // and what each writer says of it (for a log line at exit).
  std::string accounting_line() const;

 private:
  // Writes the response line; false when the request was already finished or not accepted.
  bool respond(Request& request, Outcome outcome, boost::json::value client_id, boost::json::value disagg_request_id,
               boost::json::value ctx_request_id, std::optional<boost::json::value> payload,
               std::optional<Termination> termination) const;
  // Hand a record to the destination; what it does not take is counted, never thrown.
  void hand_over(TraceLine line) const;
  void hand_over(perf::PerfMetricsRecord record) const;
  static RequestLine request_line(Request& request, std::string trace_id, std::string session, std::string_view status,
                                  std::string body);
  void reject_line(Request& request, std::string body, const boost::json::value& parsed, boost::json::array errors,
                   std::optional<std::string> parse_error) const;

  std::unique_ptr<RecordingDestination> destination_;
  bool engine_id_as_disagg_request_id_;
  bool traces_;
  mutable std::atomic<double> steady_clock_offset_{0};
  mutable std::atomic<std::uint64_t> refused_{0};
  bool started_ = false;
  bool closed_ = false;
};

}  // namespace jsonl::recording
