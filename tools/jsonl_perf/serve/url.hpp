// Where a `jsonl-perf` server listens, as its URL names it: http://HOST:PORT.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace jsonl_perf::serve {

struct Endpoint {
  std::string host;
  std::string port;
};

// The host and port of `url` (a path after them is ignored). Throws
// std::invalid_argument naming `option` (the flag the URL came from) when it is not
// http://HOST:PORT.
inline Endpoint parse_url(const std::string& url, std::string_view option) {
  const auto refuse = [&] {
    return std::invalid_argument(std::string(option) + ": expected http://HOST:PORT, got '" + url + "'");
  };
  std::string_view rest(url);
  if (!rest.starts_with("http://")) throw refuse();
  rest.remove_prefix(7);
  rest = rest.substr(0, rest.find('/'));
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == rest.size()) throw refuse();
  return {std::string(rest.substr(0, colon)), std::string(rest.substr(colon + 1))};
}

}  // namespace jsonl_perf::serve
