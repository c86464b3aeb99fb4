#include "sse.hpp"

#include <algorithm>
#include <utility>

namespace jsonl_perf::sse {
namespace {

// What follows `field` at the start of one of the event's lines, to that line's end.
std::string_view field_of(std::string_view event, std::string_view field) {
  for (std::size_t line = 0; line < event.size();) {
    const std::size_t end = std::min(event.find('\n', line), event.size());
    const std::string_view text = event.substr(line, end - line);
    if (text.starts_with(field)) return text.substr(field.size());
    line = end + 1;
  }
  return {};
}

}  // namespace

std::string frame(std::string_view data, std::string_view name) {
  std::string text;
  text.reserve(data.size() + name.size() + 16);
  if (!name.empty()) text.append("event: ").append(name).append("\n");
  text.append("data: ").append(data).append(event_end);
  return text;
}

std::string_view data_of(std::string_view event) { return field_of(event, "data: "); }
std::string_view name_of(std::string_view event) { return field_of(event, "event: "); }

void EventSplitter::feed(std::string_view bytes) {
  pending_.erase(0, std::exchange(from_, 0));
  pending_.append(bytes);
}

std::optional<std::string_view> next_event(std::string_view text, std::size_t& from) {
  const std::size_t end = text.find(event_end, from);
  if (end == std::string_view::npos) return std::nullopt;
  const std::string_view event = text.substr(from, end - from);
  from = end + event_end.size();
  return event;
}

std::optional<std::string_view> EventSplitter::next() { return next_event(pending_, from_); }

std::string EventSplitter::take_rest() {
  std::string rest = pending_.substr(from_);
  pending_.clear();
  from_ = 0;
  return rest;
}

}  // namespace jsonl_perf::sse
