// The write worker: the thread behind WriteSide, its jobs and the commit policy (plain:
// each append booked as performed; durable: group commit, then the books through
// :publication). An implementation partition: only the write side's implementation
// imports it.
module;

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

module jsonl.writer:write_worker;

import :write_side;
import :rotating_sink;
import :compressing_sink;
import :publication;

namespace jsonl::detail {

std::size_t records_of(const WriteJob& job) noexcept {
  std::size_t records = 0;
  for (const FileAppend& append : job.appends) records += append.records;
  return records;
}

// Ends the commit however the worker leaves it.
struct CommitEnd {
  Sink& sink;
  ~CommitEnd() { sink.end_commit(); }
};

// Everything the write side's threads share, gathered in one place as OpenTelemetry's
// batch processors gather theirs (SynchronizationData). WriteSide, the worker thread and
// close's publisher each hold it by shared_ptr, so that an append or a publication close
// walked away from touches nothing freed. Its parts, each with its own rule:
//   - the configuration and the sink chain: set at construction, then read by any thread;
//     the sinks are called by the worker only (the current file's name, which any thread
//     may read, is under RotatingSink's own lock);
//   - the hand-off, guarded by `mutex`: the drain hands jobs in (hand_off, wait_idle)
//     and takes spent buffers back (reclaim); close cancels and stops; the worker takes
//     jobs and says when it is done with them. Each side waits on a condition of its
//     own, notified only for what it waits for: a worker woken for a job the drain
//     still holds the lock over, or for a job it finished itself, would only sleep again;
//   - the publication (:publication), with its own lock, taken before `mutex` and never
//     while holding it: the worker books each durable commit there; the worker, flush
//     and close publish;
//   - the worker's alone: the outcomes it reuses, its run of failures, and the files
//     retention let go since its last commit was booked.
struct WriteSide::State {
  State(std::shared_ptr<WriterState> writer_state, std::shared_ptr<Sink> configured_sink)
      : writer(std::move(writer_state)),
        accounts(writer->accounts),
        own_destination(configured_sink && !configured_sink->writes_files()),
        configured(configured_sink ? std::move(configured_sink)
                                   : std::make_shared<FileSink>(writer->options.durability.calls)),
        compressing(writer->options.compression.enabled()
                        ? std::make_unique<CompressingSink>(writer->options.compression, *configured,
                                                            writer->options.clock)
                        : nullptr),
        rotating(writer->options.output_dir
                     ? std::make_unique<RotatingSink>(writer->options, compressed_or_configured(), accounts)
                     : nullptr),
        sink(rotating ? static_cast<Sink&>(*rotating) : compressed_or_configured()) {
    const WriterOptions& options = writer->options;
    // An inert writer (no output directory, a sink that writes files) has no books.
    if (options.durability.enabled && (options.output_dir || options.durability.books_dir)) {
      publication.emplace(writer);
    }
    spent_texts.reserve(std::max<std::size_t>(1, writer->options.queue_size / writer->options.batch_size));
  }

  // The configuration and the sink chain.
  const std::shared_ptr<WriterState> writer;
  Accounts& accounts;
  const bool own_destination;  // the configuration's sink writes no files
  const std::shared_ptr<Sink> configured;
  // With compression: each file's frames, over `configured`.
  const std::unique_ptr<CompressingSink> compressing;
  // With an output directory: the writer's own file, named and rotated over the two.
  const std::unique_ptr<RotatingSink> rotating;
  Sink& sink;  // where appends go: `rotating`, or else `compressing` or `configured`
  Sink& compressed_or_configured() const noexcept {
    return compressing ? static_cast<Sink&>(*compressing) : *configured;
  }

  // The hand-off, guarded by `mutex`.
  std::mutex mutex;
  std::condition_variable work_arrived;  // for the worker: a job pending, or stopping
  std::condition_variable work_done;     // for the drain: jobs finished, or close cancelled
  std::vector<WriteJob> pending;    // handed off, not yet taken by the thread
  std::vector<WriteJob> taken;      // the thread's: the jobs it performs now
  std::size_t pending_records = 0;  // in `pending`
  bool busy = false;                // the thread is performing jobs
  std::size_t unaccounted = 0;      // records of those jobs not yet counted
  bool abandoned = false;           // those jobs were given up by close
  bool cancelled = false;
  bool stopping = false;
  bool publishing = false;  // idle, and publishing the books
  // What performed jobs leave for the drain to fill again (WriteSide::reclaim). Room for
  // the texts of as many full batches as the queue holds, made at once: the first round
  // that fills many batches does not grow it. The drain takes every text at its next
  // round and keeps what it bounds; at most `kept_lists` lists wait here.
  std::vector<std::string> spent_texts;
  std::vector<std::vector<FileAppend>> spent_lists;

  // The publication: with durability, for a writer that writes somewhere.
  std::optional<Publication> publication;

  // The worker's alone: the current run of failed appends (the records it lost; none: no
  // run) and whether its filesystem refusal was warned of; with durability, the files
  // retention let go since the last commit was booked; the outcomes of the appends
  // performed now, kept to be reset rather than made anew (see commit for their bound).
  std::uint64_t lost_in_run = 0;
  bool run_warned = false;
  std::vector<std::filesystem::path> expired_files;
  std::vector<AppendOutcome> outcomes;

  // Keeps the buffers of the jobs taken, emptied; under `mutex`. A text grown far
  // beyond what a round needs (one huge record) is freed instead.
  void spend() {
    for (WriteJob& job : taken) {
      for (FileAppend& append : job.appends) {
        if (append.bytes.capacity() > largest_spent_text) continue;
        append.bytes.clear();
        spent_texts.push_back(std::move(append.bytes));
      }
      job.appends.clear();
      if (job.appends.capacity() != 0 && spent_lists.size() < kept_lists) {
        spent_lists.push_back(std::move(job.appends));
      }
    }
    taken.clear();
  }
  static constexpr std::size_t largest_spent_text = std::size_t{16} << 20;
  // The drain takes one list a round; a commit that performed several rounds' jobs
  // returns more, and those past this are freed.
  static constexpr std::size_t kept_lists = 2;

  bool durable() const noexcept { return publication.has_value(); }
  bool idle() const noexcept { return !busy && pending.empty(); }
  bool can_take(std::size_t records) const noexcept {
    return idle() || (durable() && pending_records + records <= writer->options.queue_size);
  }

  void log(LogLevel level, const std::string& message) const noexcept { accounts.log(level, message); }
  const std::string& subject() const noexcept { return accounts.subject(); }

  // Counts what the worker still holds, plus `extra`, as abandoned, but a commit in
  // progress as unknown: its appends may yet land. The thread will not count the rest
  // of its jobs.
  void abandon(std::size_t extra) noexcept {
    std::size_t records = extra + pending_records;
    pending.clear();
    pending_records = 0;
    if (busy && !abandoned) {
      if (durable()) {
        accounts.unknown(unaccounted);
      } else {
        records += unaccounted;
      }
    }
    abandoned = busy;
    unaccounted = 0;
    accounts.dropped(DropReason::abandoned, records);
  }

  // One append through the sink, its outcome in `outcome`; an exception out of it is an
  // append that failed before any of its bytes was written.
  void perform(const FileAppend& append, AppendOutcome& outcome) {
    try {
      outcome.reset();
      outcome.records = append.records;
      outcome.bytes = append.bytes.size();
      sink.append(append, outcome);
      outcome.content_bytes = append.content_bytes();
    } catch (const std::system_error& failure) {
      refused(append, failure.what(), false, outcome);
    } catch (...) {
      refused(append, describe_current_exception(), true, outcome);
    }
    if (!rotating) return;
    for (std::filesystem::path& file : rotating->take_expired()) {
      if (compressing) compressing->let_go(file);
      if (durable()) {
        expired_files.push_back(std::move(file));
      } else {
        remove_expired(*writer, file);
      }
    }
  }

  static void refused(const FileAppend& append, std::string error, bool unexpected, AppendOutcome& outcome) {
    outcome.reset();
    outcome.file = append.file;
    outcome.records = append.records;
    outcome.bytes = append.bytes.size();
    outcome.content_bytes = append.content_bytes();
    outcome.error = std::move(error);
    outcome.unexpected = unexpected;
  }

  // Counts one outcome. An append that failed begins or continues a run of failures:
  // the first filesystem refusal of a run is warned of, and the first append written
  // after a run says how many records the run lost. Without durability every record of
  // a failed append is dropped; with it, those its landed bytes touch are unknown.
  void book(const AppendOutcome& outcome) {
    if (outcome.placement.recreated_directory) {
      accounts.add(Counter::directories_recreated);
      if (outcome.succeeded()) {
        log(LogLevel::warning, "Recreated the missing " + subject() + " JSONL directory '" +
                                   outcome.file.parent_path().string() + "'");
      }
    }
    if (outcome.succeeded()) {
      if (lost_in_run != 0) {
        log(LogLevel::warning, "Resumed writing " + subject() + " JSONL after " + std::to_string(lost_in_run) +
                                   " records were lost");
        run_warned = false;
        lost_in_run = 0;
      }
      accounts.written(outcome.records, outcome.lines_appended(), outcome.bytes_appended(), outcome.content_bytes);
      return;
    }
    const std::size_t unknown = durable() ? outcome.touched : 0;
    const std::size_t never_written = outcome.records - unknown;
    accounts.unknown(unknown);
    lost_in_run += outcome.records;
    if (outcome.unexpected) {
      accounts.unexpected(Accounts::Stage::writing, never_written, *outcome.error);
      return;
    }
    accounts.dropped(DropReason::write_error, never_written);
    if (!run_warned) {
      run_warned = true;
      log(LogLevel::warning, "Failed to write " + subject() + " JSONL: " + *outcome.error);
    }
  }

  // Plain mode: each append is counted as soon as it is performed, unless close
  // abandoned the job meanwhile.
  void perform_and_book(const FileAppend& append) {
    AppendOutcome& outcome = outcomes.empty() ? outcomes.emplace_back() : outcomes.front();
    perform(append, outcome);
    const std::lock_guard lock(mutex);
    if (abandoned) return;
    unaccounted -= append.records;
    book(outcome);
  }

  // Durable mode: writes every append of `jobs`, makes them durable, then books the
  // outcomes (counts and file books) unless close abandoned the commit meanwhile, and
  // publishes the books when due.
  void commit(const std::vector<WriteJob>& jobs, bool end_every_frame) {
    std::size_t appends = 0;
    for (const WriteJob& job : jobs) appends += job.appends.size();
    // A commit that took a backlog leaves no more outcomes behind it than a full round
    // of two files a batch needs: those past it are freed at the next commit.
    const std::size_t kept = std::max(appends, std::min(outcomes.size(), 2 * writer->round_batches()));
    if (kept < outcomes.size()) {
      outcomes.resize(kept);
      outcomes.shrink_to_fit();
    }
    outcomes.resize(kept);
    std::span<AppendOutcome> performed(outcomes.data(), appends);
    {
      const CommitEnd end{sink};
      std::size_t next = 0;
      for (const WriteJob& job : jobs) {
        for (const FileAppend& append : job.appends) perform(append, performed[next++]);
      }
      if (compressing) {
        const std::vector<std::filesystem::path> ends = compressing->frames_to_end(end_every_frame);
        outcomes.resize(std::max(outcomes.size(), appends + ends.size()));
        for (const std::filesystem::path& file : ends) perform(CompressingSink::frame_end(file), outcomes[next++]);
        performed = std::span<AppendOutcome>(outcomes.data(), next);
      }
      sink.make_durable(performed);
    }
    bool urgent = false;
    {
      const std::unique_lock books_lock = publication->hold();
      const std::lock_guard lock(mutex);
      if (abandoned) return;
      unaccounted = 0;
      urgent = publication->book(performed, expired_files);
      for (const AppendOutcome& outcome : performed) book(outcome);
    }
    publication->publish(urgent);
  }

  // Publishes with `lock` released, marked publishing meanwhile, so that stop() leaves
  // the thread rather than waiting on a publication stuck in the filesystem.
  void publish_unlocked(std::unique_lock<std::mutex>& lock, bool urgent) {
    publishing = true;
    lock.unlock();
    publication->publish(urgent);
    lock.lock();
    publishing = false;
  }

  // Waits for a job, or until stopping with none (false). With durability, an idle
  // worker looks at the books every publish interval and publishes what changed.
  bool wait_for_work(std::unique_lock<std::mutex>& lock) {
    const auto ready = [this] { return !pending.empty() || stopping; };
    if (!durable()) {
      work_arrived.wait(lock, ready);
    } else {
      while (!work_arrived.wait_for(lock, writer->options.durability.publish_interval, ready)) {
        publish_unlocked(lock, false);
      }
    }
    return !pending.empty();
  }

  void run() {
    std::unique_lock lock(mutex);
    if (durable()) publish_unlocked(lock, true);
    while (wait_for_work(lock)) {
      // With durability every job waiting goes in one commit; without, there is one.
      taken.swap(pending);
      pending_records = 0;
      busy = true;
      abandoned = false;
      unaccounted = 0;
      for (const WriteJob& job : taken) unaccounted += records_of(job);
      const std::uint64_t through = taken.back().through;
      const bool end_every_frame =
          std::any_of(taken.begin(), taken.end(), [](const WriteJob& job) { return job.ends_frames; });
      lock.unlock();
      if (durable()) {
        commit(taken, end_every_frame);
      } else {
        const CommitEnd end{sink};
        for (const WriteJob& job : taken) {
          for (const FileAppend& append : job.appends) perform_and_book(append);
        }
        end_frames(end_every_frame);
      }
      lock.lock();
      if (!abandoned) writer->admission.finished_through(through);
      spend();
      busy = false;
      work_done.notify_all();
    }
    // An empty commit as the worker stops: the sink releases what it kept for the next
    // (a file's descriptor), so a stopped writer holds no file open.
    lock.unlock();
    sink.end_commit();
  }

  // Plain mode: ends the frames due (CompressingSink::frames_to_end), each as an append.
  void end_frames(bool all) {
    if (!compressing) return;
    for (const std::filesystem::path& file : compressing->frames_to_end(all)) {
      perform_and_book(CompressingSink::frame_end(file));
    }
  }
};

}  // namespace jsonl::detail
