// The writer's non-template core: the submit gate, the counters and their rate-limited
// log messages, the output file, flush's progress marks, and the write worker. Not part of the public
// contract; exported only because JsonlRecordWriter's template code uses it.
module;

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

export module jsonl.writer:engine;

import :log;
import :options;
import :stats;
import :layout;
import :output_file;
import :durable_commit;
import :books;

export namespace jsonl::detail {

// Thrown on the drain thread when `close` gives up waiting for it. Deliberately not a
// std::exception: error containment that catches everything must rethrow it, or the
// drain would go on after close returned.
struct DrainCancelled {};

// "<type>: <what>" for an exception in flight (inside a catch block).
std::string describe_current_exception();

// Rate limit shared by every counted log message: the first, then every 1000th.
constexpr bool at_log_point(std::uint64_t count) noexcept { return count == 1 || count % 1000 == 0; }

class WriterEngine : public std::enable_shared_from_this<WriterEngine> {
 public:
  // Throws std::invalid_argument for an unusable stem, queue size or batch size.
  explicit WriterEngine(WriterOptions options);

  const WriterOptions& options() const noexcept { return options_; }

  // What a submit may do with its record. After pushing an admitted record, the submit
  // calls wake_drain() if told to.
  enum class Admission { refused, admitted, admitted_wake_drain };

  // Admits a record into the queue's depth, or refuses it: counted as ignored when the
  // writer is not accepting, as a queue-full drop (rate-limited WARNING) when full.
  // One compare-and-swap on the state word; no lock, no system call.
  Admission reserve_slot() noexcept;
  // Like reserve_slot, but waits while the queue is full. Refused, counting the record as
  // ignored, when the writer stops accepting meanwhile. Never counts a queue-full drop.
  Admission wait_for_slot() noexcept;
  // Gives back an admitted slot whose push failed, counting the record as a queue-full drop.
  void refuse_reserved() noexcept;
  // The drain is done with `records` it took from the queue: serialized and released.
  // Returns how many records it has been done with in all, these included.
  std::uint64_t took(std::size_t records) noexcept;
  // Admitted records the drain is not done with, including any whose push is still in
  // progress.
  std::uint64_t depth() const noexcept;
  bool accepting() const noexcept;
  // Refuses every later submit and wakes the drain and waiting submits. Records admitted
  // before may still be on their way into the queue: depth() says how many remain.
  void stop_accepting() noexcept;

  // The drain calls this after finding the queue empty, the `empty_polls`-th time in a
  // row. While records are admitted but not yet pushed, or once the writer stops
  // accepting, it returns at once. Otherwise the drain naps (a submit wakes it early only
  // once the queue is half full), and after a run of empty naps sleeps until the next
  // submit wakes it. So a submit makes no system call while records keep coming, and an
  // idle writer costs no CPU.
  void await_records(unsigned empty_polls);
  void wake_drain() noexcept;

  // Creates the output directory and names the first file. Empty without an output
  // directory, or when the directory cannot be created (logged at ERROR).
  std::optional<std::filesystem::path> open_output();
  // The writer's current file (rotation may have replaced the first); empty before
  // open_output() and when it failed.
  std::optional<std::filesystem::path> current_file() const { return output_.current(); }
  // Write worker: where an append of `bytes` to the writer's file goes (see OutputFile),
  // and, once written, the file's size after it (see OutputFile::appended).
  std::filesystem::path file_for_append(std::size_t bytes);
  void appended_to_writer_file(std::uint64_t file_size, std::uint64_t bytes) noexcept {
    output_.appended(file_size, bytes);
  }

  // Flush's marks. Records are taken and their rounds performed in queue order, so
  // "the first N records taken are all written or dropped" is one number.
  // Records accepted so far: taken, or still in the queue's depth.
  std::uint64_t accepted() const noexcept;
  // The records of every round up to the `taken`-th record taken are written or dropped.
  void finished_through(std::uint64_t taken) noexcept;
  // Every record accepted is written or dropped, and nothing more will be accepted.
  void finished_all() noexcept;
  // Waits until the first `records` accepted are written or dropped (true), or until
  // `deadline` (false).
  bool await_finished(std::uint64_t records, std::chrono::steady_clock::time_point deadline);

  void count_sanitized();
  void count_malformed(std::string_view error);
  void count_serialize_errors(std::size_t records, std::string_view description);
  void count_abandoned(std::size_t records) noexcept;
  // Write worker, for the outcome of each append. An append that failed begins or
  // continues a run of failures: the first filesystem refusal of a run is warned of,
  // and the first append written after a run says how many records the run lost.
  void count_written(const std::filesystem::path& file, std::size_t records, const AppendResult& result);
  // Records the drain serialized, in a round side by side or alone.
  void count_serialized(std::size_t records, bool side_by_side) noexcept;
  void count_write_error(std::size_t records, std::string_view error);
  void count_unexpected_write(std::size_t records, std::string_view description);

  // Durability (WriterOptions::durability); without it, none of the rest is called.
  bool durable() const noexcept { return books_.has_value(); }
  std::optional<std::filesystem::path> books_file() const;
  // The books' lock, held while a commit is booked and while a document is made and
  // published, so that a document's counts agree with its file books. The write worker
  // takes it before its own state's lock, so that a publication stuck in the filesystem
  // never holds up close's cancellation.
  [[nodiscard]] std::unique_lock<std::mutex> hold_books() { return std::unique_lock(books_mutex_); }
  // Write worker: the files whose names are known durable, for its commits.
  std::set<std::filesystem::path>& durable_names() noexcept { return durable_names_; }
  // Write worker, holding hold_books(): books a commit's outcomes, in the order
  // performed: the counts, the file books, and a run of failures as count_written says.
  // Returns whether an append failed.
  bool book_commit(const std::vector<CommitOutcome>& outcomes);
  // Records close gave up on while the append holding them was in progress.
  void count_unknown(std::size_t records) noexcept;
  // Publishes the books if due (WriterBooks::publish_if_due), logging a failure
  // (WARNING, rate-limited). Any thread.
  void publish_books(bool urgent);
  // The closed document, published on a thread of its own within `timeout` (WARNING
  // otherwise, the thread left to finish): close's last step.
  void publish_closed_books(std::chrono::milliseconds timeout);

  std::uint64_t dropped_records() const noexcept;
  WriterStats stats() const noexcept;

  void log(LogLevel level, std::string_view message) const noexcept;

 private:
  // The state word: flags and, below them, the depth. Submits and the drain agree on
  // admission, closing and waking through this one atomic.
  static constexpr std::uint64_t accepting_bit = std::uint64_t{1} << 63;
  static constexpr std::uint64_t idle_bit = std::uint64_t{1} << 62;     // drain waits for a submit
  static constexpr std::uint64_t napping_bit = std::uint64_t{1} << 61;  // drain naps; wake it when half full
  static constexpr std::uint64_t depth_mask = napping_bit - 1;
  static constexpr std::chrono::milliseconds nap{1};
  static constexpr unsigned naps_before_idle = 20;

  Admission admit(std::uint64_t& state) noexcept;
  void announce_room() noexcept;

  WriterOptions options_;
  alignas(64) std::atomic<std::uint64_t> state_;
  alignas(64) std::mutex drain_mutex_;
  std::condition_variable drain_wakeup_;
  alignas(64) std::atomic<std::uint32_t> room_epoch_{0};  // bumped when room may have appeared
  std::atomic<std::uint64_t> waiting_{0};     // submits waiting for room
  alignas(64) std::atomic<std::uint64_t> dropped_records_{0};  // the reference's shared counter
  std::atomic<std::uint64_t> queue_full_{0};
  std::atomic<std::uint64_t> malformed_{0};
  // Unexpected errors of one stage: the records they cost, and how many there were
  // (each stage's log lines are rate-limited on its own count).
  struct UnexpectedErrors {
    std::atomic<std::uint64_t> records{0};
    std::atomic<std::uint64_t> events{0};
  };
  void count_unexpected(UnexpectedErrors& stage, std::size_t records, const std::string& doing,
                        std::string_view description);
  BookCounts book_counts() const noexcept;

  UnexpectedErrors serialize_errors_;
  UnexpectedErrors unexpected_writes_;
  std::atomic<std::uint64_t> write_errors_{0};
  std::atomic<std::uint64_t> abandoned_{0};
  std::atomic<std::uint64_t> ignored_{0};
  alignas(64) std::atomic<std::uint64_t> taken_{0};
  std::atomic<std::uint64_t> sanitized_{0};
  std::atomic<std::uint64_t> written_{0};
  std::atomic<std::uint64_t> lines_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> appends_{0};
  std::atomic<std::uint64_t> serialized_side_by_side_{0};
  std::atomic<std::uint64_t> serialized_alone_{0};
  std::atomic<std::int64_t> last_append_ns_{0};
  std::atomic<std::uint64_t> directories_recreated_{0};
  std::atomic<std::uint64_t> unknown_{0};
  // The current run of failed appends (write worker only): the records it lost (none:
  // no run; an append that fails holds at least one), and whether its filesystem
  // refusal was warned of.
  std::uint64_t lost_in_run_ = 0;
  bool run_warned_ = false;

  OutputFile output_;
  std::optional<WriterBooks> books_;  // with durability and an output directory
  std::mutex books_mutex_;  // see hold_books()
  // Write worker only: the files whose names are known durable (see DurableCommit).
  std::set<std::filesystem::path> durable_names_;
  // Files rotation deleted since the last commit was booked (write worker only): marked
  // in the books after that commit's outcomes, which may be appends to them.
  std::vector<std::filesystem::path> deleted_files_;

  // Flush: taken_ and the depth read as one (took() changes both), and the progress mark.
  mutable std::mutex took_mutex_;
  alignas(64) std::atomic<std::uint64_t> finished_through_{0};
  std::atomic<std::uint32_t> flush_waiters_{0};
  std::mutex flush_mutex_;
  std::condition_variable flush_progress_;
};

// What the write worker performs: appends, in order, through the layout's appender.
// Appends to `writer_file` go to the writer's current file. Once they are performed,
// every record up to the `through`-th taken is written or dropped.
struct WriteJob {
  std::shared_ptr<const FileAppender> appender;
  std::vector<FileAppend> appends;
  std::filesystem::path writer_file;
  std::uint64_t through = 0;
};

// The thread that performs appends, one job at a time, so that the drain can serialize
// the next batch meanwhile and `close` can walk away from an append that never returns.
// With durability it takes every job waiting as one commit (group commit): while a
// commit runs it accepts further jobs up to the queue size in records. Its state is
// shared with the thread, so an abandoned append touches nothing freed.
class WriteWorker {
 public:
  explicit WriteWorker(std::shared_ptr<WriterEngine> engine);
  WriteWorker(const WriteWorker&) = delete;
  WriteWorker& operator=(const WriteWorker&) = delete;
  ~WriteWorker();

  void start();
  // Waits until the worker can take `job` (it is idle, or with durability `job` fits
  // beside the jobs waiting), then gives it `job`. If cancel() comes first, counts `job`
  // and whatever the worker still holds as abandoned (with durability, a commit in
  // progress as unknown) and throws DrainCancelled.
  void hand_off(WriteJob job);
  // Waits until the worker is idle; on cancel() as hand_off.
  void wait_idle();
  // Makes a waiting or later hand_off/wait_idle throw DrainCancelled.
  void cancel() noexcept;
  // Ends the thread: joined when idle, detached when an abandoned append still runs.
  void stop() noexcept;

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace jsonl::detail
