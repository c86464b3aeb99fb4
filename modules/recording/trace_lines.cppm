// The request trace's two lines as typed records, and their one spelling. A handler's
// thread only moves what it already holds into them (the body's text, the headers, the
// frames it sent); the text is written where the line is written, on a writer's thread,
// so that nothing is built on the request's thread for another thread to free.
//
// The keys are the reference server's, in its order: the stamps ahead of the headers and
// the body, so that a reader finds them in a line's first characters whatever its size.
module;

#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

export module jsonl.recording:trace_lines;

import jsonl.request_trace;
import :reports;

export namespace jsonl::recording {

// A request as the server took it ("accepted") or refused it ("rejected_400").
struct RequestLine {
  std::string trace_id;
  std::string session;
  std::chrono::system_clock::time_point recorded_at;
  double server_arrival_time = 0;
  std::string route;
  std::string_view status;  // a literal
  Headers headers;          // a credential's value is written "[redacted]"
  // The body as it arrived, JSON text, written as the value Python's json.loads reads
  // from it (integers of any size exact); or, with body_parse_error, the text of a body
  // that did not parse, written as a string (invalid UTF-8 replaced).
  std::string body;
  std::optional<boost::json::value> validation_errors;  // a refused request's: an array
  std::optional<std::string> body_parse_error;
};

// How an accepted request ended, and what was sent: the answer sent whole, or the
// streamed frames as they went out.
struct ResponseLine {
  std::string trace_id;
  std::string session;
  std::chrono::system_clock::time_point finished_at;
  Outcome status = Outcome::completed;
  boost::json::value client_id;  // numbers or null
  boost::json::value disagg_request_id;
  boost::json::value ctx_request_id;
  std::optional<Termination> termination;
  std::optional<boost::json::value> whole_answer;  // empty: the frames below
  std::string frames;
};

using TraceLine = std::variant<RequestLine, ResponseLine>;

// The session a request's lines are stamped with: the conversation the reference's
// sticky routing keys the request on, sanitized (jsonl::sanitize_session_key;
// "_no_session" when it names none). In order, the first that is not blank: the body's
// conversation_params.conversation_id; the headers x-claude-code-session-id,
// x-claude-session-id, x-session-id, x-correlation-id, x-session-affinity and
// x-multi-turn-session-id (names in any case; a repeated one's last value); the body's
// prompt_cache_key, client_metadata.thread_id and client_metadata.session_id.
std::string session_of(const Headers& headers, const boost::json::value& body);

// The file a line goes to in its hour's bucket ("requests" or "responses"), and the
// time it was made (the bucket's hour).
std::string_view trace_kind(const TraceLine& line);
std::chrono::system_clock::time_point made_at(const TraceLine& line);

// `line` as the request-trace writer takes it: its kind and hour, and the line.
TraceRecord<TraceLine> trace_record(TraceLine line);

// Appends `line` as JSON text, without a newline, as json.dumps(ensure_ascii=False)
// writes it. Returns whether invalid UTF-8 had to be replaced; throws
// jsonl::MalformedRecord as a writer's format does (a body that is not JSON text).
bool append_trace_line(const TraceLine& line, std::string& out);

// "2026-09-03T14:05:09.123456+00:00", as Python's datetime.isoformat() writes a UTC
// time (no fraction when the microseconds are 0).
std::string iso_utc(std::int64_t microseconds_since_epoch);

// A trace line's text, written on the writer's thread: the payload format of
// RequestTraceWriter<TraceLine>.
class TraceLineFormat final : public RecordFormat<TraceLine> {
 public:
  explicit TraceLineFormat(JsonTextOptions) {}
  bool append_line(TraceLine& line, std::string& out) const override;
};

}  // namespace jsonl::recording

// The request-trace writer's payload format for the typed lines (TraceFormat composes it).
template <>
struct jsonl::format_for<jsonl::recording::TraceLine, jsonl::JsonLineFormat> {
  using type = jsonl::recording::TraceLineFormat;
};
