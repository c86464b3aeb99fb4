// What the writer's test files share: options that log into a record, the accounting
// identity, and appends that wait for the test.
#pragma once

#include <boost/json/value.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <latch>
#include <memory>
#include <utility>

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
  return stats.submitted == stats.written + stats.unknown + stats.dropped();
}

// Appends that do not return until the test releases them; the gates tell when the
// first append was entered and returned.
class StuckSink : public jsonl::FileSink {
 public:
  struct Gates {
    std::latch entered{1};
    std::latch release{1};
    std::latch returned{1};
    std::atomic<bool> first{true};
  };
  explicit StuckSink(std::shared_ptr<Gates> gates) : gates_(std::move(gates)) {}
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    const bool first = gates_->first.exchange(false);
    if (first) gates_->entered.count_down();
    gates_->release.wait();
    FileSink::append(append, outcome);
    if (first) gates_->returned.count_down();
  }

 private:
  std::shared_ptr<Gates> gates_;
};

}  // namespace jsonl_test
