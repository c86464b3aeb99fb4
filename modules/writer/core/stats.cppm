// A snapshot of a writer's counters.
module;

#include <chrono>
#include <cstdint>
#include <optional>

export module jsonl.writer:stats;

export namespace jsonl {

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

  // Dropped, by reason.
  std::uint64_t dropped_queue_full = 0;        // refused by submit: the queue was full
  std::uint64_t dropped_malformed = 0;         // the format says it cannot be represented
  std::uint64_t dropped_serialize_error = 0;   // the format failed unexpectedly
  std::uint64_t dropped_write_error = 0;       // in a batch the filesystem refused (with
                                               // durability: none of its bytes landed)
  std::uint64_t dropped_unexpected_write = 0;  // in a batch whose write failed unexpectedly
  std::uint64_t abandoned = 0;   // accepted, then given up at close (timeout) or at disable
  std::uint64_t ignored = 0;     // refused by submit: not accepting (no directory,
                                 // disabled, or closing)

  std::uint64_t sanitized = 0;      // written with invalid UTF-8 replaced by U+FFFD
  std::uint64_t lines_written = 0;  // newline-terminated lines appended, counting the
                                    // terminator added to a torn last line
  std::uint64_t bytes_written = 0;
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

  std::uint64_t dropped() const noexcept {
    return dropped_queue_full + dropped_malformed + dropped_serialize_error +
           dropped_write_error + dropped_unexpected_write + abandoned + ignored;
  }
};

}  // namespace jsonl
