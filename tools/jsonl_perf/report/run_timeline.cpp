// The run report's blocks over time: the instance's occupancy once a second and latency
// by window of finish, both on seconds since the run's first arrival.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "run_blocks.hpp"

namespace jsonl_perf::report {
namespace {

// Occupancy is sampled over at most this long (a week): a wrongly stamped time must not
// make the report's memory grow with its error.
constexpr double longest_occupancy_s = 7 * 24 * 3600.0;

struct Span {
  double from, to;
};

}  // namespace

std::optional<double> first_arrival(const std::vector<Request>& requests) {
  std::optional<double> first;
  for (const Request& request : requests) {
    if (request.started) first = std::min(first.value_or(*request.started), *request.started);
  }
  return first;
}

std::vector<Occupancy> occupancy(const std::vector<Request>& requests) {
  std::vector<const Request*> answered;
  std::optional<double> start, end;
  for (const Request& request : requests) {
    if (request.status == "rejected_400" || request.status == "no_response") continue;
    if (!request.started || !request.finished) continue;
    answered.push_back(&request);
    start = std::min(start.value_or(*request.started), *request.started);
    end = std::max(end.value_or(*request.finished), *request.finished);
  }
  const std::optional<double> origin = first_arrival(requests);
  if (answered.empty() || !origin) return {};
  const double first = std::ceil(*start);
  const double last = std::min(*end, *start + longest_occupancy_s);
  if (first > last) return {};
  const std::size_t samples = static_cast<std::size_t>(std::floor(last - first)) + 1;
  // Sample k (at first + k) counts a span when from <= first + k < to: a difference array
  // of +1 at the first such k and -1 past the last.
  std::vector<std::vector<long>> changes(4, std::vector<long>(samples + 1, 0));
  const auto add = [&](std::size_t series, Span span) {
    const auto index = [&](double at) {
      return static_cast<std::size_t>(std::clamp(std::ceil(at - first), 0.0, static_cast<double>(samples)));
    };
    const std::size_t from = index(span.from), to = index(span.to);
    if (from >= to) return;
    ++changes[series][from];
    --changes[series][to];
  };
  std::unordered_map<std::string, Span> conversations;
  for (const Request* request : answered) {
    const double started = *request->started, finished = *request->finished;
    const std::string key = request->session.empty() ? request->trace_id : request->session;
    const auto [at, fresh] = conversations.try_emplace(key, Span{started, finished});
    if (!fresh) at->second = {std::min(at->second.from, started), std::max(at->second.to, finished)};
    add(1, {started, finished});
    if (request->ttft_ms) {
      const double first_token = started + *request->ttft_ms / 1000;
      if (request->prefill_ms) add(2, {first_token - *request->prefill_ms / 1000, first_token});
      add(3, {first_token, finished});
    }
  }
  for (const auto& [key, span] : conversations) add(0, span);
  std::vector<Occupancy> series(samples);
  long counts[4] = {0, 0, 0, 0};
  for (std::size_t k = 0; k < samples; ++k) {
    for (std::size_t s = 0; s < 4; ++s) counts[s] += changes[s][k];
    series[k] = {first + static_cast<double>(k) - *origin, static_cast<std::size_t>(counts[0]),
                 static_cast<std::size_t>(counts[1]), static_cast<std::size_t>(counts[2]),
                 static_cast<std::size_t>(counts[3])};
  }
  return series;
}

std::vector<LatencyWindow> latency_over_time(const std::vector<Request>& requests) {
  std::vector<const Request*> done;
  double last = 0;
  for (const Request& request : requests) {
    if (!completed(request) || !request.finished) continue;
    done.push_back(&request);
    last = std::max(last, *request.finished);
  }
  const std::optional<double> origin = first_arrival(requests);
  if (done.empty() || !origin) return {};
  double width = 0;
  for (const double candidate : {1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0, 1800.0, 3600.0}) {
    width = candidate;
    if (std::floor(std::max(0.0, last - *origin) / width) + 1 <= most_latency_windows) break;
  }
  std::map<long, std::vector<const Request*>> by_window;
  for (const Request* request : done) {
    by_window[static_cast<long>(std::floor((*request->finished - *origin) / width))].push_back(request);
  }
  std::vector<LatencyWindow> windows;
  for (const auto& [index, members] : by_window) {
    std::vector<double> ttft, e2e;
    for (const Request* member : members) {
      if (member->ttft_ms) ttft.push_back(*member->ttft_ms);
      if (member->e2e_ms) e2e.push_back(*member->e2e_ms);
    }
    windows.push_back({static_cast<double>(index) * width, width, members.size(), spread(std::move(ttft)),
                       spread(std::move(e2e))});
  }
  return windows;
}

}  // namespace jsonl_perf::report
