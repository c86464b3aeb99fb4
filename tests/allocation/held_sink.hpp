// A file sink whose appends wait while the test holds them, for the allocation tests.
#pragma once

#include <condition_variable>
#include <mutex>

import jsonl.writer;

namespace jsonl_test {

// A file sink whose appends wait while the test holds them. While one waits, a plain
// writer's drain waits to hand off the round after it, and the records submitted
// meanwhile are all taken in the round after that; a durable writer's drain goes on
// handing rounds off, up to the queue size in records.
class HeldSink : public jsonl::FileSink {
 public:
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    {
      std::unique_lock lock(mutex_);
      if (held_) {
        waiting_ = true;
        changed_.notify_all();
        changed_.wait(lock, [this] { return !held_; });
      }
    }
    FileSink::append(append, outcome);
  }
  void hold() {
    const std::lock_guard lock(mutex_);
    held_ = true;
    waiting_ = false;
  }
  void await_held_append() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return waiting_; });
  }
  void let_through() {
    const std::lock_guard lock(mutex_);
    held_ = false;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool held_ = false;
  bool waiting_ = false;
};

}  // namespace jsonl_test
