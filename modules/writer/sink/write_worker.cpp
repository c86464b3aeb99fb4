module;

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

module jsonl.writer;

import :engine;
import :durable_commit;

namespace jsonl::detail {
namespace {

std::size_t records_of(const WriteJob& job) noexcept {
  std::size_t records = 0;
  for (const FileAppend& append : job.appends) records += append.records;
  return records;
}

}  // namespace

struct WriteWorker::State {
  explicit State(std::shared_ptr<WriterEngine> engine) : engine(std::move(engine)) {}

  std::shared_ptr<WriterEngine> engine;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<WriteJob> pending;     // handed off, not yet taken by the thread
  std::size_t pending_records = 0;  // in `pending`
  bool busy = false;                // the thread is performing jobs
  std::size_t unaccounted = 0;      // records of those jobs not yet counted
  bool abandoned = false;           // those jobs were given up by close
  bool cancelled = false;
  bool stopping = false;
  bool publishing = false;  // idle, and publishing the books

  bool idle() const noexcept { return !busy && pending.empty(); }

  bool can_take(std::size_t records) const noexcept {
    return idle() || (engine->durable() && pending_records + records <= engine->options().queue_size);
  }

  // Counts what the worker still holds, plus `extra`, as abandoned, but a commit in
  // progress as unknown: its appends may yet land. The thread will not count the rest
  // of its jobs.
  void abandon(std::size_t extra) noexcept {
    std::size_t records = extra + pending_records;
    pending.clear();
    pending_records = 0;
    if (busy && !abandoned) {
      if (engine->durable()) {
        engine->count_unknown(unaccounted);
      } else {
        records += unaccounted;
      }
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
      appender.prepare(append);
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
      if (to_writer_file) engine->appended_to_writer_file(result->file_size, result->bytes);
      engine->count_written(append.file, append.records, *result);
    } else if (filesystem_error) {
      engine->count_write_error(append.records, error);
    } else {
      engine->count_unexpected_write(append.records, error);
    }
  }

  // Writes every append of `jobs`, fsyncs each file once, and books the outcomes unless
  // close abandoned the commit meanwhile; then publishes the books when due.
  void commit(std::deque<WriteJob>& jobs) {
    DurableCommit commit(*engine->options().durability.calls, engine->durable_names());
    for (WriteJob& job : jobs) {
      for (FileAppend& append : job.appends) {
        const bool to_writer_file = append.file == job.writer_file;
        const std::size_t before = commit.outcomes().size();
        try {
          if (to_writer_file) append.file = engine->file_for_append(append.bytes.size());
          job.appender->prepare(append);
          const CommitOutcome& outcome = commit.write(append);
          // Rotation measures each append as it goes, not once the commit is booked.
          if (to_writer_file && !outcome.error) {
            engine->appended_to_writer_file(*outcome.payload_offset + outcome.bytes, outcome.bytes);
          }
        } catch (const std::system_error& failure) {
          failed_append(commit, before, append, failure.what(), false);
        } catch (...) {
          failed_append(commit, before, append, describe_current_exception(), true);
        }
      }
    }
    commit.sync();
    bool failed;
    {
      const std::unique_lock books = engine->hold_books();
      const std::lock_guard lock(mutex);
      if (abandoned) return;
      unaccounted = 0;
      failed = engine->book_commit(commit.outcomes());
    }
    engine->publish_books(failed);
  }

  // Publishes the books with `lock` released, marked publishing meanwhile, so that
  // stop() leaves the thread rather than waiting on a publication stuck in the
  // filesystem.
  void publish_unlocked(std::unique_lock<std::mutex>& lock, bool urgent) {
    publishing = true;
    lock.unlock();
    engine->publish_books(urgent);
    lock.lock();
    publishing = false;
  }

  // An exception out of an append of a commit: the append fails, and if its lines
  // were attempted, they are unknown.
  static void failed_append(DurableCommit& commit, std::size_t outcomes_before, const FileAppend& append,
                            std::string error, bool unexpected) {
    CommitOutcome& outcome =
        commit.outcomes().size() > outcomes_before ? commit.outcomes().back() : commit.refuse(append, error);
    outcome.error = std::move(error);
    outcome.unexpected = unexpected;
    outcome.touched = outcome.payload_offset ? outcome.records : 0;
  }

  // Waits for a job, or until stopping with none (false). With durability, an idle
  // worker looks at the books every publish interval and publishes what changed.
  bool wait_for_work(std::unique_lock<std::mutex>& lock) {
    const auto ready = [this] { return !pending.empty() || stopping; };
    if (!engine->durable()) {
      changed.wait(lock, ready);
    } else {
      while (!changed.wait_for(lock, engine->options().durability.publish_interval, ready)) {
        publish_unlocked(lock, false);
      }
    }
    return !pending.empty();
  }

  void run() {
    const bool durable = engine->durable();
    std::unique_lock lock(mutex);
    if (durable) publish_unlocked(lock, true);
    while (wait_for_work(lock)) {
      // With durability every job waiting goes in one commit; without, one at a time.
      std::deque<WriteJob> jobs;
      if (durable) {
        jobs.swap(pending);
      } else {
        jobs.push_back(std::move(pending.front()));
        pending.pop_front();
      }
      pending_records = 0;
      busy = true;
      abandoned = false;
      unaccounted = 0;
      for (const WriteJob& job : jobs) unaccounted += records_of(job);
      const std::uint64_t through = jobs.back().through;
      lock.unlock();
      if (durable) {
        commit(jobs);
      } else {
        for (FileAppend& append : jobs.front().appends) perform(*jobs.front().appender, append, jobs.front().writer_file);
      }
      lock.lock();
      if (!abandoned) engine->finished_through(through);
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
  const std::size_t records = records_of(job);
  std::unique_lock lock(state_->mutex);
  state_->changed.wait(lock, [&] { return state_->can_take(records) || state_->cancelled; });
  if (state_->cancelled) {
    state_->abandon(records);
    throw DrainCancelled{};
  }
  state_->pending.push_back(std::move(job));
  state_->pending_records += records;
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
    stuck = !state_->idle() || state_->publishing;
    state_->changed.notify_all();
  }
  if (stuck) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

}  // namespace jsonl::detail
