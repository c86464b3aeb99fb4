// libFuzzer over what a disaggregated proxy reads from its workers (serve's
// worker_answers): the input's first byte says which reading, the rest is what the worker
// sent. Whatever it holds, reading must neither crash nor hang, and what it returns must
// be usable as the proxy uses it: a context answer with a first choice, its hand-over and
// a finish reason; a stream's relayed bytes never holding its metrics event.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "worker_answers.hpp"

namespace {

using namespace jsonl_perf::serve;
namespace sse = jsonl_perf::sse;

void require(bool condition) {
  if (!condition) std::abort();
}

void context_answer(const std::string& text) {
  std::string problem;
  std::optional<ContextAnswer> read = read_context_answer(text, problem);
  require(read.has_value() == problem.empty());
  if (read) {
    require(first_choice(read->answer) != nullptr);
    require(read->handed.ctx_request_id.has_value());
  }
}

void whole_answer(const std::string& text) {
  boost::json::value answer;
  if (read_whole_answer(text, answer).empty()) require(first_choice(answer) != nullptr);
  require(!worker_message(text, 500).empty());
}

// The stream fed in pieces of `piece` bytes, as a hop reads them.
void stream(std::string_view bytes, std::size_t piece) {
  sse::EventSplitter splitter;
  std::string relayed;
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    splitter.feed(bytes.substr(at, piece));
    relayed += take_relayed_events(splitter, false).events;
  }
  relayed += take_relayed_events(splitter, true).events;
  require(relayed.size() <= bytes.size() + 2 * (bytes.size() / 2 + 1));
  sse::EventSplitter again;
  again.feed(relayed);
  while (const std::optional<std::string_view> event = again.next()) require(!is_metrics_event(*event));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      context_answer(text);
      break;
    case 1:
      whole_answer(text);
      break;
    default:
      stream(text, std::max<std::size_t>(1, data[0] / 3 % 64));
  }
  return 0;
}
