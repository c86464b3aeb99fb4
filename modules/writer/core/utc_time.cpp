module;

#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

module jsonl.writer;

import :utc_time;

namespace jsonl {
namespace {

// `at` spelt by strftime, stretch by stretch between the "%f"s.
std::string strftime_text(std::chrono::sys_time<std::chrono::microseconds> micros, std::string_view pattern) {
  const auto seconds = std::chrono::floor<std::chrono::seconds>(micros);
  const std::time_t since_epoch = std::chrono::system_clock::to_time_t(seconds);
  std::tm utc{};
  ::gmtime_r(&since_epoch, &utc);
  char fraction[8];
  std::snprintf(fraction, sizeof fraction, "%06lld", static_cast<long long>((micros - seconds).count()));
  std::string text;
  for (std::size_t from = 0;;) {
    const std::size_t mark = pattern.find("%f", from);
    const std::string stretch(pattern.substr(from, mark == pattern.npos ? pattern.npos : mark - from));
    char spelt[64];
    text.append(spelt, std::strftime(spelt, sizeof spelt, stretch.c_str(), &utc));
    if (mark == pattern.npos) return text;
    text += fraction;
    from = mark + 2;
  }
}

void append_digits(std::string& text, long long value, int width) {
  char digits[8];
  for (int i = width - 1; i >= 0; --i, value /= 10) digits[i] = static_cast<char>('0' + value % 10);
  text.append(digits, static_cast<std::size_t>(width));
}

// `at` spelt from the civil calendar, without the C library's time zone lock, when
// `pattern` holds only the numeric fields a time stamp is made of (%Y %m %d %H %M %S %f,
// %%): what every caller's pattern holds. Empty otherwise. A system_clock time's year
// has four digits (its range is about 1678 to 2262), as %Y spells it.
std::optional<std::string> numeric_text(std::chrono::sys_time<std::chrono::microseconds> micros,
                                        std::string_view pattern) {
  const auto day = std::chrono::floor<std::chrono::days>(micros);
  const std::chrono::year_month_day date{day};
  const auto since_midnight = micros - day;
  const std::chrono::hh_mm_ss time{std::chrono::floor<std::chrono::seconds>(since_midnight)};
  std::string text;
  text.reserve(pattern.size() + 16);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      text += pattern[i];
      continue;
    }
    if (++i == pattern.size()) return std::nullopt;
    switch (pattern[i]) {
      case 'Y':
        append_digits(text, static_cast<int>(date.year()), 4);
        break;
      case 'm':
        append_digits(text, static_cast<unsigned>(date.month()), 2);
        break;
      case 'd':
        append_digits(text, static_cast<unsigned>(date.day()), 2);
        break;
      case 'H':
        append_digits(text, time.hours().count(), 2);
        break;
      case 'M':
        append_digits(text, time.minutes().count(), 2);
        break;
      case 'S':
        append_digits(text, time.seconds().count(), 2);
        break;
      case 'f':
        append_digits(text, (since_midnight % std::chrono::seconds(1)).count(), 6);
        break;
      case '%':
        text += '%';
        break;
      default:
        return std::nullopt;
    }
  }
  return text;
}

}  // namespace

std::string utc_text(std::chrono::system_clock::time_point at, std::string_view pattern) {
  const auto micros = std::chrono::floor<std::chrono::microseconds>(at);
  if (std::optional<std::string> text = numeric_text(micros, pattern)) return std::move(*text);
  return strftime_text(micros, pattern);
}

}  // namespace jsonl
