// Time points as UTC text: the one formatter behind file names, hour buckets and the
// books' times.
module;

#include <chrono>
#include <string>
#include <string_view>

export module jsonl.writer:utc_time;

export namespace jsonl {

// `at` in UTC, spelt as strftime's `pattern` spells it, with "%f" (Python's spelling)
// for the six digits of its microseconds: "%Y-%m-%dT%H:%M:%S.%fZ" gives
// "2026-01-01T00:00:00.123456Z". The time is cut to the microsecond, never rounded, so
// that no text names a time later than `at` (an hour's last microsecond stays in that
// hour). Each stretch of `pattern` between "%f"s must spell fewer than 64 characters.
std::string utc_text(std::chrono::system_clock::time_point at, std::string_view pattern);

}  // namespace jsonl
