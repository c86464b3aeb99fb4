// Every path `jsonl-perf serve` answers, in one table: what answers it and the methods
// it takes. A path outside the table is 404; a method the table does not give it, 405.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <ranges>
#include <string_view>

#include "openai.hpp"

namespace jsonl_perf::serve {

// The generation routes first, numbered as Route numbers them.
enum class Endpoint {
  chat_completions,
  completions,
  responses,
  messages,
  count_tokens,
  health,
  metrics,
  models,
  steady_clock_offset
};

struct RouteEntry {
  Endpoint endpoint;
  std::string_view path;
  bool get;
  bool post;
};

inline constexpr auto routes = std::to_array<RouteEntry>({
    {Endpoint::chat_completions, route_path(Route::chat_completions), false, true},
    {Endpoint::completions, route_path(Route::completions), false, true},
    {Endpoint::responses, route_path(Route::responses), false, true},
    {Endpoint::messages, route_path(Route::messages), false, true},
    // The prompt's tokens of a Messages request, answered whole and never traced.
    {Endpoint::count_tokens, "/v1/messages/count_tokens", false, true},
    {Endpoint::health, "/health", true, false},
    {Endpoint::metrics, "/metrics", true, false},
    {Endpoint::models, "/v1/models", true, false},
    // GET: the clock handshake's stamps; POST: the offset a proxy sets.
    {Endpoint::steady_clock_offset, "/steady_clock_offset", true, true},
});
static_assert(std::ranges::all_of(std::views::iota(std::size_t{0}, routes.size()),
                                  [](std::size_t i) { return routes[i].endpoint == Endpoint(i); }),
              "the routes table lists every endpoint once, in the enum's order");
static_assert(std::ranges::all_of(every_route, [](Route route) {
  return routes[std::size_t(route)].path == route_path(route) && routes[std::size_t(route)].post;
}), "a generation route's entry is its endpoint's, and takes POST");

// The table's entry for `path`, if any.
constexpr const RouteEntry* route_entry(std::string_view path) {
  const auto found = std::ranges::find(routes, path, &RouteEntry::path);
  return found == routes.end() ? nullptr : &*found;
}

// The generation route an endpoint serves, if it is one.
constexpr std::optional<Route> generation_route(Endpoint endpoint) {
  if (std::size_t(endpoint) < every_route.size()) return Route(std::size_t(endpoint));
  return std::nullopt;
}

}  // namespace jsonl_perf::serve
