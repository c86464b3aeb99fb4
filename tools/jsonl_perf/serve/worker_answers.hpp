// What a disaggregated proxy reads from its workers, each field checked before use: a
// context worker's answer, a generation worker's answer sent whole, a worker's error
// answer, and a generation worker's stream as it arrives. Nothing here trusts a worker:
// whatever bytes one sends, these return what is usable or say what is wrong.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "disaggregation.hpp"
#include "sse.hpp"
#include "recording.hpp"

namespace jsonl_perf::serve {

// The first choice's object of a chat or completion answer, if it has one.
boost::json::object* first_choice(boost::json::value& answer);

// Reads a worker's whole answer into `answer`: empty when it is a JSON object whose first
// choice is an object; otherwise what is wrong with it, to follow "answered".
std::string read_whole_answer(const std::string& text, boost::json::value& answer);

// A context worker's answer, as the proxy goes on from it.
struct ContextAnswer {
  boost::json::value answer;
  DisaggregatedParams handed;  // its ctx_request_id set
  std::string finish_reason;
};

// The context answer `text` holds; or none, and `problem` says what is wrong with it, to
// follow "answered".
std::optional<ContextAnswer> read_context_answer(const std::string& text, std::string& problem);

// What a worker's error answer says, without its address (its detail or message).
std::string worker_message(std::string_view body, unsigned status);

// The events of a generation worker's stream that arrived whole, each with its blank
// line, to relay; its metrics event kept apart, never relayed. At the body's end the last
// event without its blank line is relayed too.
struct RelayedEvents {
  std::string events;
  std::optional<jsonl::recording::HopTimes> metrics;
};
RelayedEvents take_relayed_events(sse::EventSplitter& stream, bool body_done);

}  // namespace jsonl_perf::serve
