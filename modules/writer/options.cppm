// What a writer is configured with. Read once, when the writer is constructed.
module;

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

export module jsonl.writer:options;

import :log;

export namespace jsonl {

struct WriterOptions {
  // Where files go. Without one the writer does nothing at all: no thread, no file,
  // `submit` refuses every record (counted as ignored).
  std::optional<std::filesystem::path> output_dir;

  // Files are named "<file_stem>-<hostname>-<pid>-<UTC %Y%m%dT%H%M%SZ>.jsonl". The stem
  // must name a file inside `output_dir`: empty, ".", "..", or any '/' or NUL is refused
  // with std::invalid_argument at construction.
  std::string file_stem = "records";

  // Names the records in log messages: "Dropped malformed <subject> record: ...".
  std::string subject = "records";

  // Records that may wait to be written; a submit beyond this is dropped. At least 1.
  std::size_t queue_size = 1024;

  // Records appended by one write at most. At least 1.
  std::size_t batch_size = 64;

  // How long `close` waits for queued records to be written before abandoning them.
  std::chrono::milliseconds shutdown_timeout{5000};

  // Where warnings and errors go.
  LogSink log_sink = log_to_stderr;
};

}  // namespace jsonl
