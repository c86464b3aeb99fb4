// A snapshot of a writer's counters, and the reasons a record may be dropped.
module;

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

export module jsonl.writer:stats;

export namespace jsonl {

// Why a record submitted was not written. Each reason is one enumerator and its entry
// in drop_reasons: the counters, WriterStats, the books and the Prometheus exposition
// all follow that table.
enum class DropReason : unsigned char {
  queue_full,        // refused by submit: the queue was full
  malformed,         // the format says it cannot be represented
  serialize_error,   // the format (or the route) failed unexpectedly
  write_error,       // in an append the filesystem refused (with durability: none of its
                     // bytes landed)
  unexpected_write,  // in an append whose write failed unexpectedly
  abandoned,         // accepted, then given up at close (timeout) or at disable
  ignored,           // refused by submit: not accepting (no directory, disabled, closing)
};

struct DropReasonInfo {
  DropReason reason;
  std::string_view name;  // in the books, the Prometheus label, and log-free reports
  // Counted in dropped_records(), the reference's shared counter.
  bool in_reference_counter;
  // In the books: a record refused before it was accepted (ignored) is not one of
  // theirs.
  bool booked;
};

inline constexpr std::array<DropReasonInfo, 7> drop_reasons{{
    {DropReason::queue_full, "queue_full", true, true},
    {DropReason::malformed, "malformed", true, true},
    {DropReason::serialize_error, "serialize_error", true, true},
    {DropReason::write_error, "write_error", true, true},
    {DropReason::unexpected_write, "unexpected_write", true, true},
    {DropReason::abandoned, "abandoned", false, true},
    {DropReason::ignored, "ignored", false, false},
}};

constexpr std::size_t index_of(DropReason reason) noexcept { return static_cast<std::size_t>(reason); }

// Counters are read one by one, not under one lock: the identity
//   submitted == written + unknown + dropped()
// holds at quiescent points (no submit, append or close in progress), such as after
// `close` returns. With durability, the published books balance at every publication.
struct WriterStats {
  std::uint64_t submitted = 0;  // every call to submit
  // Records whose line reached a file: the write holding it returned; with durability,
  // persisted (the append holding it was written and fsync()ed without error).
  std::uint64_t written = 0;
  // Durability only: records whose append failed after their bytes may have landed (the
  // write stopped part way, or the fsync failed), or that close gave up on while their
  // append was in progress. Neither claimed nor dropped.
  std::uint64_t unknown = 0;
  // Records dropped, by reason (see DropReason); index with index_of or use dropped(reason).
  std::array<std::uint64_t, drop_reasons.size()> dropped_by{};

  std::uint64_t sanitized = 0;      // written with invalid UTF-8 replaced by U+FFFD
  std::uint64_t lines_written = 0;  // newline-terminated lines appended, counting the
                                    // terminator added to a torn last line
  std::uint64_t bytes_written = 0;  // on disk
  // The lines' bytes before compression; without it, bytes_written less the isolating
  // newlines. bytes_written / uncompressed_bytes_written is the compression's ratio.
  std::uint64_t uncompressed_bytes_written = 0;
  std::uint64_t appends = 0;      // appends that reached a file (written / appends is the
                                  // mean batch size)
  std::uint64_t files_started = 0;          // the writer's own files: 1, plus rotations
  std::uint64_t directories_recreated = 0;  // appends that found their directory gone and
                                            // created it again
  // Records the drain serialized side by side on oneTBB's threads, and alone: it keeps
  // the way in use until the other has lately cost at least an eighth less (side by side
  // scales with the allocator).
  std::uint64_t serialized_side_by_side = 0;
  std::uint64_t serialized_alone = 0;
  // Durability only: documents of the books published, and publications that failed.
  std::uint64_t publications = 0;
  std::uint64_t publication_errors = 0;
  std::uint64_t queue_depth = 0;  // accepted records not yet serialized: queued, or held
                                  // by the drain (the queue size bounds them all)
  std::uint64_t waiting_for_room = 0;  // submit_wait calls blocked on a full queue

  // When the last append reached a file; empty before the first one. A monitor compares
  // it with the submit counters to tell an idle server from appends that stopped landing.
  std::optional<std::chrono::system_clock::time_point> last_append;

  std::uint64_t dropped(DropReason reason) const noexcept { return dropped_by[index_of(reason)]; }
  // Every record dropped, whatever the reason.
  std::uint64_t dropped() const noexcept {
    std::uint64_t sum = 0;
    for (const std::uint64_t count : dropped_by) sum += count;
    return sum;
  }
};

}  // namespace jsonl
