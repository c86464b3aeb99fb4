// What the writer's test files share: options that log into a record, and the
// accounting identity.
#pragma once

#include <chrono>
#include <filesystem>

#include "test_support.hpp"

import jsonl.writer;

namespace jsonl_test {

using Log = LogRecord<jsonl::LogLevel>;

// Stem and subject "test", a generous shutdown timeout, messages into `log`.
inline jsonl::WriterOptions test_options(const std::filesystem::path& directory, Log& log) {
  return {.output_dir = directory,
          .file_stem = "test",
          .subject = "test",
          .shutdown_timeout = std::chrono::seconds(10),
          .log_sink = log.sink()};
}

inline bool accounting_holds(const jsonl::WriterStats& stats) {
  return stats.submitted == stats.written + stats.dropped();
}

}  // namespace jsonl_test
