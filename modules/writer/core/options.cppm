// What a writer is configured with. Read once, when the writer is constructed.
module;

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <cstdint>
#include <optional>
#include <string>

export module jsonl.writer:options;

import :log;
import :file_calls;

export namespace jsonl {

// How a writer's files hold their lines. None: the lines themselves, in ".jsonl" files.
// Zstd: ".jsonl.zst" files of zstd frames (checksum in each) that span appends: each
// append adds a flushed piece to its file's frame, so that what was written decodes and
// a piece compresses against the lines before it. Pieces hold many lines even at a low
// rate: a round's for their file, held for up to WriterOptions::hold_for. A frame is
// ended by the append that brings it to frame_bytes of lines, after the first commit
// frame_age after it began, when rotation leaves its file, and at close; flush() does
// not end one. A closed file is whole frames, which every zstd reader takes; a file
// being written (or left by a killed writer) decodes up to its last append. Compression
// runs on the write worker, never on a producer's thread.
struct Compression {
  enum class Codec : unsigned char { none, zstd };
  Codec codec = Codec::none;
  // zstd's level: 1 (fastest of the usual ones) to 22, or negative for faster still and
  // larger; 0 is refused rather than read as zstd's default. Checked at construction
  // (std::invalid_argument), as are the frame's bounds (neither may be zero).
  int level = 1;
  // A frame's bounds. jsonl-perf summary shares a file among threads frame by frame,
  // and a frame left unended by a killed writer is readable by our tools only: smaller
  // frames cost ratio, larger ones those.
  std::size_t frame_bytes = std::size_t{4} << 20;
  std::chrono::seconds frame_age{60};
  // Pieces hold many lines even at a low rate: the drain appends a round's lines for a
  // file as one piece (WriterOptions::batch_size), and a piece of a few lines compresses
  // worse than one of many, so it holds a partial round for more, for at most
  // WriterOptions::hold_for (500 ms unless set).

  static Compression zstd(int level = 1) noexcept { return {Codec::zstd, level}; }
  bool enabled() const noexcept { return codec != Codec::none; }
  // The end of every file name: ".jsonl" or ".jsonl.zst".
  const char* file_extension() const noexcept { return enabled() ? ".jsonl.zst" : ".jsonl"; }
};

// Asks the writers that share it to rotate now, as logrotate's postrotate or nginx's USR1
// ask of a server: each leaves its own file before its next append and starts one named
// as rotation names it (counted in WriterStats::files_started; retention then applies),
// unless that file holds nothing yet. Requests made between two appends rotate once.
// Routed files (RecordRoute) are named by their route and are left as they are.
// request() is lock-free and async-signal-safe: a signal handler may call it.
class RotationRequests {
 public:
  void request() noexcept { made_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t made() const noexcept { return made_.load(std::memory_order_relaxed); }

 private:
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
  std::atomic<std::uint64_t> made_{0};
};

struct WriterOptions {
  // Where files go. Without one the writer does nothing at all: no thread, no file,
  // `submit` refuses every record (counted as ignored); unless the configuration's sink
  // writes no files (Sink::writes_files), which then takes none and gets every append.
  std::optional<std::filesystem::path> output_dir;

  // Files are named "<file_stem>-<hostname>-<pid>-<UTC %Y%m%dT%H%M%SZ>.jsonl" (".jsonl.zst"
  // compressed). The stem must name a file inside `output_dir`: empty, ".", "..", or any
  // '/' or NUL is refused with std::invalid_argument at construction.
  std::string file_stem = "records";

  // Plain lines unless set. Compressed, the writer never appends to a file it did not
  // start: its first file too gets a name no file has (a predecessor with the same pid
  // in the same second leaves "-1", "-2", ...), and an append that failed leaving part
  // of a frame that could not be cut off again closes that file: the writer's own file
  // rotates, a routed file refuses further appends (write errors).
  Compression compression;

  // Rotation, off unless a limit is set (one file for the writer's life, as the
  // reference). Before an append that would take the current file past
  // `max_file_bytes` (a file that already holds data: one append larger than the limit
  // still goes, whole, into a fresh file), or once the file has been current for
  // `max_file_age`, the writer starts a new file, named by the pattern above with the
  // time then; a further file in the same second gets "-1", "-2", ... before ".jsonl".
  // An append is never split between files. Compressed, the size counts bytes on disk,
  // and a file is left once it holds the limit: what an append adds on disk is known
  // only once it is compressed in the file's frame, so a file passes the limit by at
  // most one append and its frame's end.
  // Each limit, when set, must be positive.
  std::optional<std::uint64_t> max_file_bytes;
  std::optional<std::chrono::seconds> max_file_age;
  // With rotation: keep at most this many of this writer's own files, deleting the
  // oldest when a new one starts (other files in the directory are never touched).
  // At least 1 when set; empty keeps them all.
  std::optional<std::size_t> max_files;
  // Retention of routed files (RecordRoute), which do not rotate: one not appended to for
  // this long is deleted, as `max_files` deletes the writer's own, counted and booked the
  // same way. A route by the hour so keeps the current hour's files and those of the
  // hours this spans. The writer never writes a file it so deleted again: an append
  // routed to one is refused, a write error that names retention (the writer remembers
  // each name it deleted, a path an hour for such a route). Positive when set; empty
  // keeps every routed file.
  std::optional<std::chrono::seconds> max_routed_file_idle;
  // Rotation asked for from outside (see RotationRequests), with or without the limits;
  // none: only they rotate.
  std::shared_ptr<RotationRequests> rotation_requests;

  // The wall clock that names files and ages them. The system clock unless a test
  // drives it; called on the thread calling start() and on the write worker.
  std::function<std::chrono::system_clock::time_point()> clock = [] { return std::chrono::system_clock::now(); };

  // Names the records in log messages: "Dropped malformed <subject> record: ...".
  std::string subject = "records";

  // Records that may wait to be written; a submit beyond this is dropped. At least 1.
  // The writer allocates a slot for each when it is constructed (sizeof(Record),
  // rounded up to 64 bytes), and nothing per record after.
  std::size_t queue_size = 1024;

  // Records appended by one write at most (compressed: serialized together). The drain
  // takes a round of batches at once, up to 16 and a quarter of the queue, and hands
  // their appends to the write side as one commit; compressed, a round's lines for a
  // file go in one append. At least 1.
  std::size_t batch_size = 64;

  // How long the drain, finding the queue empty, waits for more records before it looks
  // again; a submit wakes it early only once the queue is half full, and after 20 empty
  // waits in a row it sleeps until the next submit. Longer: fewer thread wake-ups and
  // larger appends under a light load, records reaching the file up to that much later.
  // At least 1 ms. A server recording per request gives several (a wake-up costs it
  // more than the record).
  std::chrono::milliseconds linger{1};

  // How long the drain may hold records it found for more, so that fewer, fuller
  // commits carry them: it waits for a round's records (see batch_size; compressed, they
  // make a fuller piece) for at most this long after it first found records waiting,
  // then appends what it has; a flush takes them at once, as close does. Records reach
  // the file up to that much later. Each wake-up of the writer's threads, each commit
  // and each fsync cost a fixed amount however few records they carry: a server
  // recording a request at a time holds for a few hundred ms, so that a commit carries
  // many requests, while at a high rate a round fills first and nothing waits. A writer
  // that holds serializes its rounds alone, never side by side on oneTBB's threads: those
  // save time, not cores. Unset: 500 ms compressed, nothing plain. Zero holds nothing;
  // negative is refused at construction.
  std::optional<std::chrono::milliseconds> hold_for;

  // How long `close` waits for queued records to be written before abandoning them.
  std::chrono::milliseconds shutdown_timeout{5000};

  // Where warnings and errors go.
  LogSink log_sink = log_to_stderr;

  // Runs first on each thread the writer starts (its drain, its write worker, and the
  // thread that publishes a durable writer's closing books), before the thread does any
  // of its work: to name the thread, pin it to cores, or lower its scheduling priority
  // so that a server's request threads preempt it (the recording layer lowers it to
  // nice 19). Called once per thread, concurrently with the caller's threads. An
  // exception it throws is logged as a warning and the thread goes on. oneTBB's workers,
  // which side-by-side serialization borrows, are the process's, not the writer's: it
  // does not run there.
  std::function<void()> on_thread_start;

  // Durable accounting, off by default. Off, a record counts as written once the write
  // holding it returned (its bytes are in the page cache). On:
  //   - a record is persisted (`WriterStats::written`) only once the append holding it,
  //     its newline included, was written and fsync()ed without error (for a file the
  //     writer had not yet made durable, its directory too). Batches waiting
  //     behind a slow fsync are written and fsync()ed together (group commit): the write
  //     worker takes up to `queue_size` more records while an fsync runs.
  //   - a record whose append failed after bytes may have landed (the write stopped
  //     part way, or the fsync failed) is unknown (`WriterStats::unknown`): neither
  //     claimed nor dropped. The rest of a failed append is dropped as a write error.
  //   - the writer publishes its books, "<output_dir>/_writer/<generation>.json" (or in
  //     `books_dir`, below) (schema "jsonl-writer-books/2"): its counts, and per file (its "shards") the
  //     byte range its durable appends hold and the extents of failed ones. The
  //     reference's request-trace writer uses the same names. Published atomically
  //     (temporary file, fsync, rename, directory fsync): when the worker starts; after
  //     a commit when `publish_interval` has passed since the last attempt, or at once
  //     when the commit failed; by flush(); when the worker is idle `publish_interval`
  //     with unpublished changes; and at close, with "closed": true. A publication that
  //     fails leaves the previous document whole, is counted, and is retried.
  //   - the sink is asked to make each commit durable (Sink::make_durable); the
  //     default FileSink fsync()s through `calls`. A sink that cannot be made durable
  //     (Sink::can_be_made_durable) is refused at construction.
  struct Durability {
    bool enabled = false;
    std::chrono::milliseconds publish_interval{5000};  // positive
    // Where the books are published for a sink that writes no files (which has no output
    // directory): required then, and refused otherwise (the books of files go in
    // "<output_dir>/_writer", where the verifier looks for them). Such books hold the
    // writer's counts and no shards.
    std::optional<std::filesystem::path> books_dir;
    // The system calls of the default sink's appends and of the books' documents; the
    // real ones unless a test substitutes them.
    std::shared_ptr<const FileCalls> calls = std::make_shared<FileCalls>();
  } durability;

  // How the lifecycle log lines name the output, for a configuration that keeps its
  // reference's wording; empty means "<subject> JSONL":
  //   ERROR   "Disabling <disabled> output: <error>"
  //   WARNING "Timed out flushing <flushed>; dropping remaining records"
  struct Wording {
    std::string disabled;
    std::string flushed;
  } wording;
};

}  // namespace jsonl
