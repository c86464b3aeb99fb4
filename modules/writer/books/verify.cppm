// Reading durable writers' books back: the verifier checks one document against the
// files it describes, and the reconciler does so for every document in a directory and
// reports the bytes no document claims.
module;

#include <boost/json/value.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

export module jsonl.writer:verify;

export namespace jsonl {

// One file of a document, as found on disk. The verifier reads the range the document
// claims, [start_offset, persisted_end), leaves out the unknown extents (their lines
// are counted apart, never as records or bad lines), and counts the lines that parse
// as JSON.
struct FileCheck {
  std::string file;  // relative to the output directory, as the document names it
  std::uint64_t start_offset = 0;
  std::uint64_t persisted_end = 0;
  std::uint64_t persisted_records = 0;  // the document's claim
  std::uint64_t fragments_isolated = 0;
  std::uint64_t size = 0;        // the file's size now
  std::uint64_t records = 0;     // lines in the claimed range that parse
  std::uint64_t bad_lines = 0;   // lines in it that do not
  std::uint64_t unknown_lines = 0;  // lines of the unknown extents, wholly or partly
  std::optional<std::string> error;  // the file could not be read, or is shorter than claimed
  bool deleted = false;  // retention deleted it (a document of schema 2 still lists it): nothing to read

  // records == persisted_records, no bad line, and the claimed range was read whole; or
  // the writer deleted the file.
  bool verified() const noexcept {
    return !error && (deleted || (records == persisted_records && bad_lines == 0));
  }
};

// One writer lifetime's document.
struct BooksCheck {
  std::filesystem::path document;  // relative to the output directory
  std::string schema;  // ours, our previous one, or the reference writer's
  std::string generation;
  bool closed = false;
  // submitted == persisted + dropped + unknown + pending, pending >= 0 (0 once closed),
  // and the files' persisted_records add up to persisted.
  bool balanced = false;
  std::uint64_t submitted = 0, persisted = 0, dropped = 0, unknown = 0, pending = 0;
  std::vector<FileCheck> files;
  std::optional<std::string> error;  // the document could not be read or is not of our schema

  bool verified() const noexcept;  // no error, and every file verified
};

// Bytes of a file that no document claims: written by a writer after its last
// publication (it died), or by something that keeps no books.
struct UnaccountedBytes {
  std::string file;  // relative to the output directory
  std::uint64_t size = 0;
  std::uint64_t unclaimed_bytes = 0;
  std::uint64_t whole_lines = 0;  // newline-terminated lines among them
  std::uint64_t cut_lines = 0;    // unterminated pieces of a line
  // Compressed files: runs of unclaimed bytes that end where no append of the writer can
  // (inside a block, or where a block ends mid-line) or do not decode, such as the torn
  // append a killed writer leaves: each one torn tail, the line it cut short included.
  // Lines above count the rest of the content that decoded.
  std::uint64_t torn_frames = 0;
  std::optional<std::string> error;  // the file could not be read: nothing above is known
};

struct Reconciliation {
  std::vector<BooksCheck> generations;  // ordered by document name
  std::vector<UnaccountedBytes> unaccounted;  // ordered by file; files with none left out
  bool all_books_balance() const noexcept;
  bool all_files_verify() const noexcept;  // every document's files, and no data file unreadable
};

// Checks `document` (a parsed books document: ours, our previous schema, or the
// reference request-trace writer's) against the files under `output_dir`.
// Nothing in the document is trusted: a field of the wrong type or range is the
// document's error, naming the field ("shards[3].start_offset: expected a non-negative
// integer"); a file that is not a plain relative path inside `output_dir`, is reached
// through a symbolic link or is not a regular file, and entries whose ranges overlap or
// whose unknown extents lie outside what they can claim, are each that file's error,
// and such a file is not read. Memory stays bounded however long a line is. A
// ".jsonl.zst" file's claimed ranges are decoded in file order from the claim's start
// (each frame's checksum checked as it ends): persisted bytes that end inside a piece of
// a frame (where no block or frame ends) are that file's error.
BooksCheck verify_books(const std::filesystem::path& output_dir, const boost::json::value& document);

// Every "<output_dir>/_writer/*.json" verified, and every "*.jsonl" and "*.jsonl.zst" file
// under `output_dir` measured against the union of what the documents claim (persisted ranges
// and unknown extents). A symbolic link is never read, as a document or as a data file.
// Throws std::filesystem::filesystem_error if `output_dir` cannot be listed.
Reconciliation reconcile(const std::filesystem::path& output_dir);

// The reconciliation as JSON: {"all_books_balance", "all_files_verify", "generations",
// "unaccounted"}.
boost::json::value to_json(const Reconciliation& reconciliation);

}  // namespace jsonl
