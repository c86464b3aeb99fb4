module;

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

module jsonl.recording;

import :python_json;
import :python_text;

namespace jsonl::recording {
namespace {

namespace json = boost::json;

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Where a request names its conversation, after the body's conversation_params, as the
// reference's sticky routing looks (its conversation_id.py): these headers in this order,
// then these body fields; the first non-blank value wins.
constexpr std::array<std::string_view, 6> session_headers{"x-claude-code-session-id", "x-claude-session-id",
                                                          "x-session-id",             "x-correlation-id",
                                                          "x-session-affinity",       "x-multi-turn-session-id"};
constexpr std::array<std::array<std::string_view, 2>, 3> session_body_fields{
    {{"prompt_cache_key", ""}, {"client_metadata", "thread_id"}, {"client_metadata", "session_id"}}};

// conversation_params.conversation_id as Python's str() spells it, stripped; none when
// absent, null, blank, or an object or an array.
std::optional<std::string> conversation_params_id(const json::value& body) {
  const json::object* object = body.if_object();
  const json::value* params = object ? object->if_contains("conversation_params") : nullptr;
  const json::object* fields = params ? params->if_object() : nullptr;
  const json::value* id = fields ? fields->if_contains("conversation_id") : nullptr;
  if (!id || id->is_null() || id->is_array() || id->is_object()) return std::nullopt;
  std::string text(python_strip(python_str(*id)));
  return text.empty() ? std::nullopt : std::optional(std::move(text));
}

std::string_view status_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::completed:
      return "completed";
    case Outcome::client_disconnected:
      return "client_disconnected";
    case Outcome::conversion_error:
      return "conversion_error";
    case Outcome::error:
      break;
  }
  return "error";
}

void time_member(JsonTextStream& out, std::string_view key, std::chrono::system_clock::time_point at) {
  out.key(key);
  out.string(iso_utc(std::chrono::floor<std::chrono::microseconds>(at).time_since_epoch().count()));
}

void string_member(JsonTextStream& out, std::string_view key, std::string_view value) {
  out.key(key);
  out.string(value);
}

void value_member(JsonTextStream& out, std::string_view key, const json::value& value) {
  out.key(key);
  out.value(value);
}

// [["a","1"],["a","2"]]: ordered pairs, repeats kept, a credential's value redacted.
void headers_member(JsonTextStream& out, const Headers& headers) {
  out.key("headers");
  out.begin_array();
  for (const auto& [name, value] : headers) {
    out.begin_array();
    out.string(name);
    out.string(is_credential_header(name) ? std::string_view("[redacted]") : std::string_view(value));
    out.end_array();
  }
  out.end_array();
}

void write(JsonTextStream& out, const RequestLine& line) {
  string_member(out, "event", "request");
  string_member(out, "trace_id", line.trace_id);
  string_member(out, "session", line.session);
  time_member(out, "recorded_at", line.recorded_at);
  out.key("server_arrival_time");
  out.floating(line.server_arrival_time);
  string_member(out, "route", line.route);
  string_member(out, "status", line.status);
  headers_member(out, line.headers);
  out.key("body");
  if (line.body_parse_error) {
    out.string(line.body);
  } else {
    write_python_json(out, line.body);
  }
  if (line.validation_errors) value_member(out, "validation_errors", *line.validation_errors);
  if (line.body_parse_error) string_member(out, "body_parse_error", *line.body_parse_error);
}

void write(JsonTextStream& out, const ResponseLine& line) {
  string_member(out, "event", "response");
  string_member(out, "trace_id", line.trace_id);
  string_member(out, "session", line.session);
  time_member(out, "finished_at", line.finished_at);
  string_member(out, "status", status_name(line.status));
  value_member(out, "client_id", line.client_id);
  value_member(out, "disagg_request_id", line.disagg_request_id);
  value_member(out, "ctx_request_id", line.ctx_request_id);
  if (line.termination) {
    out.key("termination");
    out.begin_object();
    string_member(out, "cause", line.termination->cause);
    string_member(out, "detail", line.termination->detail);
    out.end_object();
  }
  out.key("response");
  out.begin_object();
  if (line.whole_answer) {
    string_member(out, "kind", "json");
    value_member(out, "body", *line.whole_answer);
  } else {
    string_member(out, "kind", "sse_text");
    string_member(out, "body", line.frames);
  }
  out.end_object();
}

}  // namespace

std::string_view trace_kind(const TraceLine& line) {
  return std::holds_alternative<RequestLine>(line) ? trace_requests : trace_responses;
}

std::chrono::system_clock::time_point made_at(const TraceLine& line) {
  if (const auto* request = std::get_if<RequestLine>(&line)) return request->recorded_at;
  return std::get<ResponseLine>(line).finished_at;
}

TraceRecord<TraceLine> trace_record(TraceLine line) {
  std::string kind(trace_kind(line));
  const auto made = made_at(line);
  return {std::move(kind), std::move(line), made};
}

bool append_trace_line(const TraceLine& line, std::string& out) {
  JsonTextStream stream(out, {.ensure_ascii = false, .allow_nan = true});
  stream.begin_object();
  std::visit([&](const auto& alternative) { write(stream, alternative); }, line);
  stream.end_object();
  return stream.sanitized();
}

std::string session_of(const Headers& headers, const json::value& body) {
  if (std::optional<std::string> id = conversation_params_id(body)) return sanitize_session_key(*id);
  for (const std::string_view name : session_headers) {
    // The last of a repeated header, as a dict built from the headers keeps it.
    const auto found = std::find_if(headers.rbegin(), headers.rend(), [&](const auto& header) {
      return std::ranges::equal(header.first, name, [](char a, char b) { return lower(a) == b; });
    });
    if (found != headers.rend() && !python_strip(found->second).empty()) return sanitize_session_key(found->second);
  }
  for (const auto& path : session_body_fields) {
    const json::value* value = &body;
    for (const std::string_view key : path) {
      if (key.empty()) break;  // a path of one key
      const json::object* object = value ? value->if_object() : nullptr;
      value = object ? object->if_contains(key) : nullptr;
    }
    if (value && value->is_string() && !python_strip(value->get_string()).empty()) {
      return sanitize_session_key(value->get_string());
    }
  }
  return sanitize_session_key("");
}

std::string iso_utc(std::int64_t microseconds_since_epoch) {
  const std::chrono::system_clock::time_point at{std::chrono::microseconds(microseconds_since_epoch)};
  return utc_text(at, microseconds_since_epoch % 1'000'000 == 0 ? "%Y-%m-%dT%H:%M:%S+00:00"
                                                                : "%Y-%m-%dT%H:%M:%S.%f+00:00");
}

bool TraceLineFormat::append_line(TraceLine& line, std::string& out) const {
  const bool sanitized = append_trace_line(line, out);
  out += '\n';
  return sanitized;
}

}  // namespace jsonl::recording
