module;

#include <string>
#include <string_view>
#include <unistd.h>

module jsonl.writer;

namespace jsonl {

std::string_view level_name(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::info:
      return "INFO";
    case LogLevel::warning:
      return "WARNING";
    case LogLevel::error:
      return "ERROR";
  }
  return "UNKNOWN";
}

void log_to_stderr(LogLevel level, std::string_view message) {
  std::string line = "jsonl ";
  line += level_name(level);
  line += ": ";
  line += message;
  line += '\n';
  // One write keeps concurrent messages from interleaving mid-line.
  [[maybe_unused]] auto written = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace jsonl
