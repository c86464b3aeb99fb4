// Server-sent events as the OpenAI routes send them: an event is an optional
// "event: NAME" line and one "data: DATA" line, ended by a blank line. Written in one
// place (frame) and read in one place (EventSplitter, data_of, name_of), by the server,
// the proxy, the load client and join alike.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace jsonl_perf::sse {

// What ends an event.
inline constexpr std::string_view event_end = "\n\n";
// The data of the event that ends an OpenAI stream.
inline constexpr std::string_view done_data = "[DONE]";

// One event's bytes: "event: NAME\n" when it is named, then "data: DATA\n\n".
std::string frame(std::string_view data, std::string_view name = {});

// Of one event's text (with or without its blank line): what follows "data: " on its
// line, and what follows "event: "; empty when it has none.
std::string_view data_of(std::string_view event);
std::string_view name_of(std::string_view event);

// The next whole event of `text` from byte `from` on, without its blank line; `from`
// moves past it. None when no whole event is left.
std::optional<std::string_view> next_event(std::string_view text, std::size_t& from);

// Hands out the whole events of a stream whose bytes come in any cuts.
class EventSplitter {
 public:
  // The views next() and rest() gave go with the bytes they were read from.
  void feed(std::string_view bytes);
  // The next whole event's text without its blank line; none until one is whole.
  std::optional<std::string_view> next();
  // Once the stream ended: its last event, unterminated (empty when it ended on a blank
  // line); the splitter is then empty.
  std::string take_rest();

 private:
  std::string pending_;
  std::size_t from_ = 0;  // where the next event begins in pending_
};

}  // namespace jsonl_perf::sse
