// The request trace's two lines as typed records. A handler's thread only moves what it
// already holds into them (the parsed body, the headers, the frames it sent); the text is
// written where the line is written, on a writer's thread, so that nothing is built on
// the request's thread for another thread to free.
//
// The keys are the reference server's, in its order: the stamps ahead of the headers and
// the body, so that a reader finds them in a line's first characters whatever its size.
#pragma once

#include <boost/json/value.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "request_recorder.hpp"

namespace jsonl_recording {

// A request as the server took it ("accepted") or refused it ("rejected_400").
struct RequestLine {
  std::string trace_id;
  std::string session;
  std::chrono::system_clock::time_point recorded_at;
  double server_arrival_time = 0;
  std::string route;
  std::string_view status;  // a literal
  Headers headers;          // a credential's value is written "[redacted]"
  boost::json::value body;
  std::optional<boost::json::value> validation_errors;  // a refused request's: an array
  std::optional<std::string> body_parse_error;          // a body that did not parse
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

// The file a line goes to in its hour's bucket ("requests" or "responses"), and the
// time it was made (the bucket's hour).
std::string_view trace_kind(const TraceLine& line);
std::chrono::system_clock::time_point made_at(const TraceLine& line);

// Appends `line` as JSON text, without a newline, as json.dumps(ensure_ascii=False)
// writes it. Returns whether invalid UTF-8 had to be replaced; throws
// jsonl::MalformedRecord as a writer's format does (a NaN in a body).
bool append_trace_line(const TraceLine& line, std::string& out);

}  // namespace jsonl_recording
