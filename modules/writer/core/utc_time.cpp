module;

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <string_view>

module jsonl.writer;

import :utc_time;

namespace jsonl {

std::string utc_text(std::chrono::system_clock::time_point at, std::string_view pattern) {
  const auto micros = std::chrono::floor<std::chrono::microseconds>(at);
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

}  // namespace jsonl
