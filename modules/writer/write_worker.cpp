module;

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

module jsonl.writer;

import :engine;

namespace jsonl::detail {

struct WriteWorker::State {
  explicit State(std::shared_ptr<WriterEngine> engine) : engine(std::move(engine)) {}

  std::shared_ptr<WriterEngine> engine;
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<WriteJob> pending;  // handed off, not yet taken by the thread
  bool busy = false;                // the thread is performing a job
  std::size_t unaccounted = 0;      // records of that job not yet counted
  bool abandoned = false;           // that job was given up by close
  bool cancelled = false;
  bool stopping = false;

  bool idle() const noexcept { return !busy && !pending; }

  // Counts what the worker still holds, plus `extra`, as abandoned; the thread will not
  // count the rest of its job.
  void abandon(std::size_t extra) noexcept {
    std::size_t records = extra + (busy && !abandoned ? unaccounted : 0);
    if (pending) {
      for (const FileAppend& append : pending->appends) records += append.records;
      pending.reset();
    }
    abandoned = busy;
    unaccounted = 0;
    engine->count_abandoned(records);
  }

  // Performs one append and counts its outcome unless close abandoned the job meanwhile.
  // An append to the writer's file goes to its current file, rotated first if need be.
  void perform(const FileAppender& appender, FileAppend& append, const std::filesystem::path& writer_file) {
    std::optional<AppendResult> result;
    std::string error;
    bool filesystem_error = false;
    const bool to_writer_file = append.file == writer_file;
    try {
      if (to_writer_file) append.file = engine->file_for_append(append.bytes.size());
      result = appender.append(append);
    } catch (const std::system_error& failure) {
      filesystem_error = true;
      error = failure.what();
    } catch (...) {
      error = describe_current_exception();
    }
    const std::lock_guard lock(mutex);
    if (abandoned) return;
    unaccounted -= append.records;
    if (result) {
      engine->count_written(append, *result, to_writer_file);
    } else if (filesystem_error) {
      engine->count_write_error(append.records, error);
    } else {
      engine->count_unexpected_write(append.records, error);
    }
  }

  void run() {
    std::unique_lock lock(mutex);
    for (;;) {
      changed.wait(lock, [this] { return pending.has_value() || stopping; });
      if (!pending) return;
      WriteJob job = std::move(*pending);
      pending.reset();
      busy = true;
      abandoned = false;
      unaccounted = 0;
      for (const FileAppend& append : job.appends) unaccounted += append.records;
      lock.unlock();
      for (FileAppend& append : job.appends) perform(*job.appender, append, job.writer_file);
      lock.lock();
      if (!abandoned) engine->finished_through(job.through);
      busy = false;
      changed.notify_all();
    }
  }
};

WriteWorker::WriteWorker(std::shared_ptr<WriterEngine> engine)
    : state_(std::make_shared<State>(std::move(engine))) {}

WriteWorker::~WriteWorker() { stop(); }

void WriteWorker::start() {
  thread_ = std::thread([state = state_] { state->run(); });
}

void WriteWorker::hand_off(WriteJob job) {
  std::unique_lock lock(state_->mutex);
  state_->changed.wait(lock, [this] { return state_->idle() || state_->cancelled; });
  if (state_->cancelled) {
    std::size_t records = 0;
    for (const FileAppend& append : job.appends) records += append.records;
    state_->abandon(records);
    throw DrainCancelled{};
  }
  state_->pending = std::move(job);
  state_->changed.notify_all();
}

void WriteWorker::wait_idle() {
  std::unique_lock lock(state_->mutex);
  state_->changed.wait(lock, [this] { return state_->idle() || state_->cancelled; });
  if (state_->cancelled) {
    state_->abandon(0);
    throw DrainCancelled{};
  }
}

void WriteWorker::cancel() noexcept {
  const std::lock_guard lock(state_->mutex);
  state_->cancelled = true;
  state_->changed.notify_all();
}

void WriteWorker::stop() noexcept {
  if (!thread_.joinable()) return;
  bool stuck;
  {
    const std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    stuck = !state_->idle();
    state_->changed.notify_all();
  }
  if (stuck) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

}  // namespace jsonl::detail
