module;

#include <boost/json/value.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>

module jsonl.perf_metrics;

import :python_int;

namespace jsonl {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// int(text) for base-10 literals: surrounding whitespace, an optional sign, ASCII digits
// with single underscores between them.
std::optional<boost::json::value> parse_integer(std::string_view text) {
  text = python_strip(text);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || !is_digit(text.front()) || !is_digit(text.back())) return std::nullopt;
  std::uint64_t magnitude = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '_') {
      if (!is_digit(text[i + 1])) return std::nullopt;  // the last character is a digit
      continue;
    }
    if (!is_digit(c)) return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    magnitude = magnitude * 10 + digit;
  }
  if (!negative) {
    if (magnitude <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return boost::json::value(static_cast<std::int64_t>(magnitude));
    }
    return boost::json::value(magnitude);
  }
  constexpr auto most_negative = std::uint64_t{1} << 63;
  if (magnitude > most_negative) return std::nullopt;
  return boost::json::value(magnitude == most_negative ? std::numeric_limits<std::int64_t>::min()
                                                       : -static_cast<std::int64_t>(magnitude));
}

std::optional<boost::json::value> truncate(double number) {
  if (std::isnan(number)) return std::nullopt;  // int(nan) raises ValueError
  if (std::isinf(number)) throw std::overflow_error("cannot convert float infinity to integer");
  const double whole = std::trunc(number);
  if (whole >= -0x1p63 && whole < 0x1p63) return boost::json::value(static_cast<std::int64_t>(whole));
  if (whole >= 0 && whole < 0x1p64) return boost::json::value(static_cast<std::uint64_t>(whole));
  return std::nullopt;
}

}  // namespace

std::optional<boost::json::value> python_int(std::string_view text) { return parse_integer(text); }

std::optional<boost::json::value> python_int(const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
      return value;
    case boost::json::kind::bool_:
      return boost::json::value(std::int64_t{value.get_bool() ? 1 : 0});
    case boost::json::kind::double_:
      return truncate(value.get_double());
    case boost::json::kind::string:
      return parse_integer(value.get_string());
    default:
      return std::nullopt;
  }
}

}  // namespace jsonl
