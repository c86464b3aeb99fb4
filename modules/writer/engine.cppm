// The writer's non-template core: the submit gate, the counters and their rate-limited
// log messages, the output file's name, and the write worker. Not part of the public
// contract; exported only because JsonlRecordWriter's template code uses it.
module;

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

export module jsonl.writer:engine;

import :log;
import :options;
import :stats;
import :layout;

export namespace jsonl::detail {

// Thrown on the drain thread when `close` gives up waiting for it. Deliberately not a
// std::exception: error containment that catches everything must rethrow it, or the
// drain would go on after close returned.
struct DrainCancelled {};

// "<type>: <what>" for an exception in flight (inside a catch block).
std::string describe_current_exception();

class WriterEngine {
 public:
  // Throws std::invalid_argument for an unusable stem, queue size or batch size.
  explicit WriterEngine(WriterOptions options);

  const WriterOptions& options() const noexcept { return options_; }

  // The submit gate. enter() returns false, counting the record as ignored, unless the
  // writer accepts records; a true enter() is paired with leave().
  bool enter() noexcept;
  void leave() noexcept;
  // Claims a queue slot, or counts a queue-full drop (rate-limited WARNING).
  bool reserve_slot() noexcept;
  // Claims a queue slot, waiting while the queue is full. False, counting the record as
  // ignored, when the writer stops accepting meanwhile. Never counts a queue-full drop.
  bool wait_for_slot() noexcept;
  // Gives back a claimed slot whose push failed, counting the record as a queue-full drop.
  void refuse_reserved() noexcept;
  // The drain took `records` from the queue.
  void took(std::size_t records) noexcept;
  void announce_room() noexcept;
  // Refuses every later submit, then waits until no submit is in progress, so that
  // every accepted record is already in the queue.
  void stop_accepting() noexcept;

  // Creates the output directory and names the file. Empty without an output
  // directory, or when the directory cannot be created (logged at ERROR).
  std::optional<std::filesystem::path> open_output();

  void count_sanitized();
  void count_malformed(std::string_view error);
  void count_serialize_errors(std::size_t records, std::string_view description);
  void count_abandoned(std::size_t records) noexcept;
  void count_written(const AppendResult& result, std::size_t records) noexcept;
  void count_write_error(std::size_t records, std::string_view error);
  void count_unexpected_write(std::size_t records, std::string_view description);

  std::uint64_t dropped_records() const noexcept;
  WriterStats stats() const noexcept;

  void log(LogLevel level, std::string_view message) const noexcept;

 private:
  static constexpr std::uint64_t accepting_bit = std::uint64_t{1} << 63;

  WriterOptions options_;
  std::atomic<std::uint64_t> gate_;  // accepting_bit | submits in progress
  std::atomic<std::uint64_t> depth_{0};
  std::atomic<std::uint32_t> room_epoch_{0};  // bumped when room may have appeared
  std::atomic<std::uint64_t> waiting_{0};     // submits waiting for room
  std::atomic<std::uint64_t> taken_{0};
  std::atomic<std::uint64_t> dropped_records_{0};  // the reference's shared counter
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

  UnexpectedErrors serialize_errors_;
  UnexpectedErrors unexpected_writes_;
  std::atomic<std::uint64_t> write_errors_{0};
  std::atomic<std::uint64_t> write_error_events_{0};
  std::atomic<std::uint64_t> abandoned_{0};
  std::atomic<std::uint64_t> ignored_{0};
  std::atomic<std::uint64_t> sanitized_{0};
  std::atomic<std::uint64_t> written_{0};
  std::atomic<std::uint64_t> lines_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> appends_{0};
  std::atomic<std::int64_t> last_append_ns_{0};
};

// What the write worker performs: appends, in order, through the layout's appender.
struct WriteJob {
  std::shared_ptr<const FileAppender> appender;
  std::vector<FileAppend> appends;
};

// The thread that performs appends, one job at a time, so that the drain can serialize
// the next batch meanwhile and `close` can walk away from an append that never returns.
// Its state is shared with the thread, so an abandoned append touches nothing freed.
class WriteWorker {
 public:
  explicit WriteWorker(std::shared_ptr<WriterEngine> engine);
  WriteWorker(const WriteWorker&) = delete;
  WriteWorker& operator=(const WriteWorker&) = delete;
  ~WriteWorker();

  void start();
  // Waits until the worker is idle, then gives it `job`. If cancel() comes first, counts
  // `job` and whatever the worker still holds as abandoned and throws DrainCancelled.
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
