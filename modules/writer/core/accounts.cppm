// The writer's counters, one per outcome and attribute, and the rate-limited log lines
// that go with them. Not part of the public contract; exported only because
// JsonlRecordWriter's template code counts through it.
module;

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

export module jsonl.writer:accounts;

import :log;
import :stats;

export namespace jsonl::detail {

// Rate limit shared by every counted log message: the first, then every 1000th.
constexpr bool at_log_point(std::uint64_t count) noexcept { return count == 1 || count % 1000 == 0; }

// Lock-free; any thread. The log lines:
//   WARNING "Dropped <n> <subject> records"          a queue-full drop, at log points of
//                                                    dropped_records()
//   WARNING "Dropped malformed <subject> record: <error>"   likewise, for a malformed one
//   ERROR   "Unexpected error <doing> (<n> so far): <description>"   at log points of each
//                                                    stage's own count of errors
//   WARNING "Sanitized <n> <subject> records carrying unencodable text"
class Accounts {
 public:
  enum class Stage { serializing, writing };

  Accounts(std::string subject, LogSink sink) : subject_(std::move(subject)), sink_(std::move(sink)) {}

  void queue_full() noexcept;
  void ignored() noexcept { count_drop(DropReason::ignored, 1); }
  void malformed(std::string_view error) noexcept;
  // `records` lost to one unexpected error of `stage`.
  void unexpected(Stage stage, std::size_t records, std::string_view description) noexcept;
  // Drops that log nothing here (the caller words them, or they need no word).
  void dropped(DropReason reason, std::size_t records) noexcept { count_drop(reason, records); }
  void unknown(std::size_t records) noexcept { add(Counter::unknown, records); }
  void sanitized() noexcept;
  // An append that reached a file: `records` records in `lines` lines of `bytes` bytes on
  // disk, `content_bytes` of them before compression.
  void written(std::size_t records, std::size_t lines, std::size_t bytes, std::size_t content_bytes) noexcept;
  void serialized(std::size_t records, bool side_by_side) noexcept {
    add(side_by_side ? Counter::serialized_side_by_side : Counter::serialized_alone, records);
  }
  // The counters counted where they happen, with nothing to log (see `counters`).
  void add(Counter counter, std::uint64_t amount = 1) noexcept {
    counts_[index_of(counter)].fetch_add(amount, std::memory_order_relaxed);
  }
  std::uint64_t count(Counter counter) const noexcept {
    return counts_[index_of(counter)].load(std::memory_order_relaxed);
  }

  // Records lost to a full queue, a malformed record, an unexpected serialization error,
  // or a failed write: the reference's counter.
  std::uint64_t dropped_records() const noexcept { return dropped_records_.load(std::memory_order_relaxed); }
  // Every counter kept here, in `stats`; those admission keeps are left as they were.
  void fill(WriterStats& stats) const noexcept;

  const std::string& subject() const noexcept { return subject_; }
  // Calls the sink, swallowing what it throws.
  void log(LogLevel level, std::string_view message) const noexcept;

 private:
  // Adds to `reason`'s counter and, for the reasons it covers, to dropped_records();
  // returns the latter.
  std::uint64_t count_drop(DropReason reason, std::size_t records) noexcept;

  const std::string subject_;
  const LogSink sink_;
  alignas(64) std::array<std::atomic<std::uint64_t>, drop_reasons.size()> dropped_{};
  std::atomic<std::uint64_t> dropped_records_{0};
  std::array<std::atomic<std::uint64_t>, 2> unexpected_events_{};  // per Stage
  alignas(64) std::array<std::atomic<std::uint64_t>, counters.size()> counts_{};  // by Counter; admission's unused
  std::atomic<std::int64_t> last_append_ns_{0};
};

}  // namespace jsonl::detail
