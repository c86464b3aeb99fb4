// The writer's log sink: where its warnings and errors go.
module;

#include <functional>
#include <string_view>

export module jsonl.writer:log;

export namespace jsonl {

// Severity of a message. The writer logs WARNING for what it expects to happen under
// load or bad input (drops, malformed records, a refused append, a close timeout) and
// ERROR for what points at a bug (an unexpected exception) or a writer it had to disable.
enum class LogLevel { info, warning, error };

// Receives one complete message (no trailing newline) and its level. The writer calls it
// from the drain thread, the write worker, the thread calling `start`/`close`, and, for
// the rate-limited queue-full warning, from a producer inside `submit`: a sink must be
// thread-safe and should not block. Exceptions it throws are swallowed.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

// "INFO", "WARNING" or "ERROR".
std::string_view level_name(LogLevel level) noexcept;

// Writes "jsonl <LEVEL>: <message>\n" to stderr with one write call per message.
void log_to_stderr(LogLevel level, std::string_view message);

}  // namespace jsonl
