#include <boost/json.hpp>

#include <utility>

#include "library_names.hpp"
#include "worker_answers.hpp"

namespace jsonl_perf::serve {

json::object* first_choice(json::value& answer) {
  json::object* object = answer.if_object();
  json::value* choices = object ? object->if_contains("choices") : nullptr;
  json::array* list = choices ? choices->if_array() : nullptr;
  return list && !list->empty() ? list->front().if_object() : nullptr;
}

std::string read_whole_answer(const std::string& text, json::value& answer) {
  boost::system::error_code error;
  answer = json::parse(text, error);
  if (error) return "with what is not JSON (" + error.message() + ")";
  return first_choice(answer) ? std::string() : std::string("without a choice");
}

std::optional<ContextAnswer> read_context_answer(const std::string& text, std::string& problem) {
  ContextAnswer read;
  problem = read_whole_answer(text, read.answer);
  if (!problem.empty()) return std::nullopt;
  json::object& choice = *first_choice(read.answer);
  const json::value* params = choice.if_contains("disaggregated_params");
  json::array wrong;
  const std::optional<DisaggregatedParams> handed =
      params && params->is_object() ? read_disaggregated_params(choice, wrong) : std::nullopt;
  if (!handed || !handed->ctx_request_id || !wrong.empty()) {
    problem = "without usable disaggregated_params";
    return std::nullopt;
  }
  const json::value* reason = choice.if_contains("finish_reason");
  if (!reason || !reason->is_string()) {
    problem = "without a finish_reason string";
    return std::nullopt;
  }
  read.handed = *handed;
  read.finish_reason = reason->get_string();
  return read;
}

std::string worker_message(std::string_view body, unsigned status) {
  boost::system::error_code failed;
  const json::value value = json::parse(body, failed);
  if (!failed && value.is_object()) {
    for (const char* key : {"detail", "error", "message"}) {
      if (const json::value* found = value.get_object().if_contains(key)) {
        return found->is_string() ? std::string(found->get_string()) : json::serialize(*found);
      }
    }
  }
  return "the worker answered with status " + std::to_string(status);
}

RelayedEvents take_relayed_events(sse::EventSplitter& stream, bool body_done) {
  RelayedEvents relayed;
  while (const std::optional<std::string_view> event = stream.next()) {
    if (is_metrics_event(*event)) {
      relayed.metrics = read_metrics_event(*event);
    } else {
      relayed.events.append(*event).append(sse::event_end);
    }
  }
  if (body_done) {
    if (std::string rest = stream.take_rest(); !rest.empty()) {
      if (is_metrics_event(rest)) {
        relayed.metrics = read_metrics_event(rest);
      } else {
        relayed.events += rest;
      }
    }
  }
  return relayed;
}

}  // namespace jsonl_perf::serve
