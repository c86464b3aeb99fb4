// Where appends go: one destination interface for every mode. Plain mode writes through
// it; with durability the write worker also asks it to make a commit's appends durable.
// Rotation is a decorator of the writer's own file, in the output directory; a
// configuration that writes elsewhere supplies a sink of its own: one that writes no
// files (a socket, a pipe, memory) needs no output directory, and with durability only
// the directory its books are published in.
module;

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

export module jsonl.writer:sink;

import :file_calls;

export namespace jsonl {

// Lines bound for one file, appended with one write.
struct FileAppend {
  // Where the route sent them; empty for the writer's own file, which rotation resolves
  // to the file current when they are written.
  std::filesystem::path file;
  std::string bytes;        // whole lines, each ending in '\n'; or a piece of a zstd frame
  std::size_t records = 0;  // lines in `bytes`
  // Set when `bytes` is a piece of a zstd frame (WriterOptions::compression: the write
  // side's compressing sink makes them), ending where a block or the frame does: the
  // size of the lines in it. Such an append is never preceded by an isolating newline,
  // and must never follow a piece cut short.
  std::optional<std::size_t> frame_content_size;

  // The lines' bytes, before any compression.
  std::size_t content_bytes() const noexcept { return frame_content_size.value_or(bytes.size()); }
};

// Where in a file an append went: what a sink that writes files says beyond what any
// destination can, and what a durable writer's books record. Offsets are known once the
// file was opened and measured.
struct FilePlacement {
  std::optional<std::uint64_t> size_before;     // the file's size before anything of it
  bool fragment_isolated = false;               // a '\n' went first: the file ended mid-line
  std::optional<std::uint64_t> payload_offset;  // where its lines began: they were attempted
  bool recreated_directory = false;             // the file's directory was gone and was made again
};

// What became of one append, as any destination can say it: the bytes it was given,
// whether they all landed, and if not, why and how many did.
struct AppendOutcome {
  std::filesystem::path file;                 // the file it named; empty for a destination of its own
  std::size_t records = 0;
  std::size_t bytes = 0;                      // its lines (or frame), the isolating newline aside
  std::size_t content_bytes = 0;              // its lines before compression
  // Failed: why, and for lines that were attempted, how many payload bytes reached the
  // destination (empty when that could not be measured) and the records those bytes
  // touch, wholly or partly.
  std::optional<std::string> error;
  std::optional<std::uint64_t> landed;
  std::size_t touched = 0;
  bool unexpected = false;  // the error was not the destination's
  // Failed leaving part of a zstd frame at the destination's end that could not be cut
  // off: nothing more may be appended there.
  bool torn = false;
  // Set by a sink that writes files; one that writes no files leaves it as it arrives.
  FilePlacement placement;

  // Every field as new but `file`, which keeps its storage until the next name is
  // assigned to it: so an outcome reused for append after append allocates nothing.
  void reset() noexcept {
    std::filesystem::path name = std::move(file);
    *this = AppendOutcome{};
    file = std::move(name);
  }

  bool succeeded() const noexcept { return !error; }
  // Lines and bytes it put in the file, the isolating newline included.
  std::size_t lines_appended() const noexcept { return records + (placement.fragment_isolated ? 1 : 0); }
  std::size_t bytes_appended() const noexcept { return bytes + (placement.fragment_isolated ? 1 : 0); }
  // The file's size once it landed whole.
  std::uint64_t end() const noexcept { return placement.payload_offset.value_or(0) + bytes; }
};

// Lifecycle: the write worker calls append() for each append of a commit, in order;
// with durability, make_durable() once they are all written; then end_commit(); and
// end_commit() alone as it stops, so that nothing kept for a next commit outlives it.
// Called on the write worker only (one thread), so a sink needs no lock of its own.
// `close` may abandon a call that outlives the shutdown timeout: the sink stays alive
// until the call returns.
class Sink {
 public:
  virtual ~Sink() = default;

  // Appends `append.bytes` to the file `outcome.file` names and says in `outcome` what
  // became of it (all but content_bytes, which the caller fills in). `outcome` arrives
  // reset (AppendOutcome::reset) with the append's records and bytes, naming
  // append.file, or when that is empty the writer's current file (empty too for a
  // writer without an output directory: the sink's own destination). A sink that took
  // the bytes whole need change nothing. An outcome with an error says how much landed;
  // an exception means nothing of it was written: std::system_error and its kin that
  // the destination refused it (a write error, warned once per run of failed appends),
  // anything else an unexpected error (logged at ERROR).
  virtual void append(const FileAppend& append, AppendOutcome& outcome) = 0;

  // Whether make_durable can make its appends durable: what durable means is the sink's
  // to say. A writer asked for durability refuses, at construction, a sink that cannot.
  virtual bool can_be_made_durable() const noexcept { return false; }

  // Makes what this commit's appends wrote durable; called only when
  // can_be_made_durable(), which a sink that overrides it must say. Each outcome whose
  // bytes could not be made so gets an error and counts as landed whole (`landed` its
  // bytes, `touched` its records): its records are unknown.
  virtual void make_durable(std::span<AppendOutcome>) {
    throw std::logic_error("make_durable was called on a sink that cannot be made durable");
  }

  // The commit is over: what was held for it alone is released (what the next commit
  // will likely use, such as its files' descriptors, may be kept).
  virtual void end_commit() noexcept {}

  // Whether its appends go to files the writer names in its output directory (FileSink
  // and what derives from it). One that writes elsewhere (a socket, a pipe, memory) is
  // its own destination: the writer takes no output directory with it, names no file,
  // and hands it every append as it comes.
  virtual bool writes_files() const noexcept { return false; }
};

// Appends to local files. A file is opened with O_RDWR|O_APPEND|O_CREAT|O_CLOEXEC|
// O_NOFOLLOW and mode 0644 (before umask) at its first append and kept open while every
// commit uses it (it is closed at the end of the first commit that does not). Before
// each commit's first append to it, its name is looked up (without following a
// symlink): a file removed, renamed away or replaced there is opened again, so it is
// recreated at its name and a symlink planted there is refused. When the file's
// directory is gone, it is created again, with its parents, and the open retried once.
// If the file's last byte is not '\n' (an append cut short; read back unless the file
// is still the size this sink left it at), a '\n' is written first, so the fragment
// stays one bad line; a piece of a zstd frame goes without one. A piece whose write
// failed part way is cut off again (ftruncate to where it began, so its records were
// never written); when that fails too the outcome is torn and every later piece for
// that file is refused. The lines go in one write, continued after a partial one; what
// landed after a failed write is measured with fstat, not taken from what write
// returned. make_durable fsync()s each file written, and the directory of each whose
// name is not yet known durable (new, or empty when opened), and that directory's
// parent when the directory was made again. Filesystem errors are outcomes, never
// exceptions.
class FileSink : public Sink {
 public:
  // `calls`: the system calls of writes and fsyncs (a test's seam).
  explicit FileSink(std::shared_ptr<const FileCalls> calls = std::make_shared<FileCalls>());
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  ~FileSink() override;

  void append(const FileAppend& append, AppendOutcome& outcome) override;
  bool can_be_made_durable() const noexcept override { return true; }
  void make_durable(std::span<AppendOutcome> outcomes) override;
  void end_commit() noexcept override;
  bool writes_files() const noexcept override { return true; }

 protected:
  // The system calls it makes, for a sink that makes more of its own (directories).
  const FileCalls& calls() const noexcept { return *calls_; }

 private:
  struct Files;
  std::shared_ptr<const FileCalls> calls_;
  std::unique_ptr<Files> files_;
};

}  // namespace jsonl
