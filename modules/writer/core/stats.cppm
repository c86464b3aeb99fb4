// A snapshot of a writer's counters, and the reasons a record may be dropped.
module;

#include <array>
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ranges>
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

// Row i describes reason i (checked below).
inline constexpr auto drop_reasons = std::to_array<DropReasonInfo>({
    {DropReason::queue_full, "queue_full", true, true},
    {DropReason::malformed, "malformed", true, true},
    {DropReason::serialize_error, "serialize_error", true, true},
    {DropReason::write_error, "write_error", true, true},
    {DropReason::unexpected_write, "unexpected_write", true, true},
    {DropReason::abandoned, "abandoned", false, true},
    {DropReason::ignored, "ignored", false, false},
});

constexpr std::size_t index_of(DropReason reason) noexcept { return static_cast<std::size_t>(reason); }

// Every count a writer keeps beside its drops. Each is an enumerator, a member of
// WriterStats, and a row of `counters` below, which the counting (Accounts), the books
// and the Prometheus exposition read: a new counter is those three lines and the place
// that counts it.
enum class Counter : unsigned char {
  submitted,
  written,
  unknown,
  sanitized,
  lines_written,
  bytes_written,
  uncompressed_bytes_written,
  appends,
  files_started,
  directories_recreated,
  publications,
  publication_errors,
  queue_depth,
  waiting_for_room,
  serialized_side_by_side,
  serialized_alone,
};

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
  std::uint64_t& operator[](Counter counter) noexcept;
  std::uint64_t operator[](Counter counter) const noexcept;
  // Every record dropped, whatever the reason.
  std::uint64_t dropped() const noexcept {
    std::uint64_t sum = 0;
    for (const std::uint64_t count : dropped_by) sum += count;
    return sum;
  }
};

// Where the books state a count: "counts" (the balance), "attributes", "errors".
enum class BooksSection : unsigned char { none, counts, attributes, errors };

struct CounterInfo {
  Counter counter;
  std::uint64_t WriterStats::*member;
  // Kept by the admission, which reads it from the queue's state; the others are
  // counted where they happen, into Accounts.
  bool kept_by_admission;
  // The Prometheus family; empty: not exposed.
  std::string_view family;
  std::string_view type;  // "counter" or "gauge"
  std::string_view help;
  BooksSection books_section;
  std::string_view books_name;  // the reference's name where it states the same count
};

// Row i describes counter i (checked below), in the exposition's order: the drops by
// reason follow `unknown`.
inline constexpr auto counters = std::to_array<CounterInfo>({
    {Counter::submitted, &WriterStats::submitted, true, "jsonl_records_submitted_total", "counter",
     "Records submitted to the writer.", BooksSection::counts, "submitted"},
    {Counter::written, &WriterStats::written, false, "jsonl_records_written_total", "counter",
     "Records whose line reached a file (with durability: fsync()ed).", BooksSection::counts, "persisted"},
    {Counter::unknown, &WriterStats::unknown, false, "jsonl_records_unknown_total", "counter",
     "Records whose append failed after their bytes may have landed (durability only).", BooksSection::counts,
     "unknown"},
    {Counter::sanitized, &WriterStats::sanitized, false, "jsonl_records_sanitized_total", "counter",
     "Records written with invalid UTF-8 replaced.", BooksSection::attributes, "sanitized"},
    {Counter::lines_written, &WriterStats::lines_written, false, "jsonl_lines_written_total", "counter",
     "Newline-terminated lines appended.", BooksSection::none, {}},
    {Counter::bytes_written, &WriterStats::bytes_written, false, "jsonl_bytes_written_total", "counter",
     "Bytes appended to files (on disk, after any compression).", BooksSection::none, {}},
    {Counter::uncompressed_bytes_written, &WriterStats::uncompressed_bytes_written, false,
     "jsonl_uncompressed_bytes_written_total", "counter", "Bytes of the lines appended, before compression.",
     BooksSection::none, {}},
    {Counter::appends, &WriterStats::appends, false, "jsonl_appends_total", "counter",
     "Appends that reached a file.", BooksSection::none, {}},
    {Counter::files_started, &WriterStats::files_started, false, "jsonl_files_started_total", "counter",
     "Files the writer started: the first, then each rotation.", BooksSection::none, {}},
    {Counter::directories_recreated, &WriterStats::directories_recreated, false,
     "jsonl_directories_recreated_total", "counter", "Appends that found their directory gone and created it again.",
     BooksSection::none, {}},
    {Counter::publications, &WriterStats::publications, false, "jsonl_books_publications_total", "counter",
     "Documents of the books published (durability only).", BooksSection::none, {}},
    {Counter::publication_errors, &WriterStats::publication_errors, false, "jsonl_books_publication_errors_total",
     "counter", "Publications of the books that failed (durability only).", BooksSection::errors,
     "publication_errors"},
    {Counter::queue_depth, &WriterStats::queue_depth, true, "jsonl_queue_depth", "gauge",
     "Accepted records not yet serialized.", BooksSection::none, {}},
    {Counter::waiting_for_room, &WriterStats::waiting_for_room, true, "jsonl_submits_waiting_for_room", "gauge",
     "submit_wait calls blocked on a full queue.", BooksSection::none, {}},
    {Counter::serialized_side_by_side, &WriterStats::serialized_side_by_side, false, {}, {}, {},
     BooksSection::none, {}},
    {Counter::serialized_alone, &WriterStats::serialized_alone, false, {}, {}, {}, BooksSection::none, {}},
});

constexpr std::size_t index_of(Counter counter) noexcept { return static_cast<std::size_t>(counter); }
constexpr const CounterInfo& counter_info(Counter counter) noexcept { return counters[index_of(counter)]; }

inline std::uint64_t& WriterStats::operator[](Counter counter) noexcept { return this->*counter_info(counter).member; }
inline std::uint64_t WriterStats::operator[](Counter counter) const noexcept { return this->*counter_info(counter).member; }

}  // namespace jsonl

namespace jsonl {

static_assert(std::ranges::all_of(std::views::iota(std::size_t{0}, drop_reasons.size()),
                                  [](std::size_t i) { return index_of(drop_reasons[i].reason) == i; }),
              "drop_reasons: row i must describe DropReason i");
static_assert(std::ranges::all_of(std::views::iota(std::size_t{0}, counters.size()),
                                  [](std::size_t i) { return index_of(counters[i].counter) == i; }),
              "counters: row i must describe Counter i");

}  // namespace jsonl
