module;

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <sys/stat.h>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>
#include <utility>
#include <vector>

module jsonl.writer;

import :verify;
import :books_document;
import :books_schema;
import :line_scan;
import :posix_file;
import :zstd_frames;

namespace jsonl {
namespace {

namespace field = detail::books_schema;
constexpr std::uint64_t chunk_bytes = 1 << 20;
// Documents are read whole; a larger one is reported rather than read.
constexpr std::uint64_t max_document_bytes = std::uint64_t{64} << 20;

// Opens `relative` (a plain relative path, see FileClaim) under `root` for reading,
// following no symbolic link on the way and reading nothing but a regular file: a
// document names its files, and nothing it names may lead the verifier out of the
// directory or into a device or a pipe.
detail::FileDescriptor open_inside(const std::filesystem::path& root, const std::filesystem::path& relative) {
  detail::FileDescriptor at(root, O_RDONLY | O_DIRECTORY);
  const std::filesystem::path last = relative.filename();
  for (const std::filesystem::path& part : relative.parent_path()) {
    detail::FileDescriptor next(::openat(at.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.is_open() && (errno == ELOOP || errno == ENOTDIR)) {
      throw std::runtime_error(part.string() + " on the way to " + relative.string() +
                               " is a symbolic link or not a directory: not followed");
    }
    if (!next.is_open()) detail::throw_errno("open", part);
    at = std::move(next);
  }
  detail::FileDescriptor file(::openat(at.get(), last.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!file.is_open()) {
    if (errno == ELOOP) throw std::runtime_error(relative.string() + " is a symbolic link: not followed");
    detail::throw_errno("open", relative);
  }
  struct stat status {};
  if (::fstat(file.get(), &status) != 0) detail::throw_errno("fstat", relative);
  if (!S_ISREG(status.st_mode)) throw std::runtime_error(relative.string() + " is not a regular file");
  return file;
}

class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(detail::FileDescriptor fd) : fd_(std::move(fd)) {}

  std::uint64_t size() const {
    const off_t end = ::lseek(fd_.get(), 0, SEEK_END);
    if (end < 0) throw std::system_error(errno, std::generic_category(), "lseek");
    return static_cast<std::uint64_t>(end);
  }

  // Calls `take` with [begin, end) in pieces of at most chunk_bytes.
  template <class Take>
  void read(std::uint64_t begin, std::uint64_t end, Take&& take) {
    while (begin < end) {
      buffer_.resize(static_cast<std::size_t>(std::min(chunk_bytes, end - begin)));
      const ssize_t got = ::pread(fd_.get(), buffer_.data(), buffer_.size(), static_cast<off_t>(begin));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw std::system_error(errno, std::generic_category(), "pread");
      if (got == 0) throw std::runtime_error("the file ends before the range it is read for");
      take(std::string_view(buffer_.data(), static_cast<std::size_t>(got)));
      begin += static_cast<std::uint64_t>(got);
    }
  }

 private:
  detail::FileDescriptor fd_;
  std::string buffer_;
};

bool is_data_file(const std::filesystem::path& file) {
  return file.extension() == ".jsonl" || (is_compressed_file(file) && file.stem().extension() == ".jsonl");
}

// The lines of a file's ranges, read in file order. A compressed file's frames span
// appends, so its ranges are decoded by one decoder from `from` (where a frame starts:
// the file's start, or where a writer began appending), through any bytes between them.
class RangeReader {
 public:
  RangeReader(ReadOnlyFile& file, bool compressed, std::uint64_t from)
      : file_(file), compressed_(compressed), at_(from) {}

  // How a compressed range is read that does not end where one of the writer's appends
  // can: inside a block, where a block of an append that spans several ends mid-line,
  // or in bytes that do not decode.
  enum class TornEnd {
    fails,          // persisted bytes, which end where an append does: the check's error
    counts_a_line,  // what decoded is read, the line it leaves open counted as a line
    is_one_tail,    // what decoded is read; the line it leaves open is the torn tail's
  };

  // Feeds `lines` the lines [begin, end) holds: its bytes, or its content decoded. Says
  // whether the range ends where one of the writer's appends can end: a plain range
  // always does, a compressed one where a block ends and its content ends a line.
  bool feed(std::uint64_t begin, std::uint64_t end, detail::LineScan& lines, TornEnd torn_end) {
    if (!compressed_) {
      file_.read(begin, end, [&](std::string_view bytes) { lines.feed(bytes); });
      lines.end_segment();
      return true;
    }
    if (!decoder_) decoder_.emplace();
    if (begin < at_) throw std::logic_error("ranges are read in file order");
    bool whole = true;
    try {
      decode(at_, begin, [](std::string_view) {});
      decode(begin, end, [&](std::string_view content) { lines.feed(content); });
      whole = decoder_->between_pieces() && !lines.line_open();
    } catch (const std::runtime_error&) {
      if (torn_end == TornEnd::fails) throw;
      decoder_.reset();
      whole = false;
    }
    at_ = end;
    if (!whole && torn_end == TornEnd::is_one_tail) {
      lines.drop_open_line();
    } else {
      lines.end_segment();
    }
    return whole;
  }

 private:
  template <class Take>
  void decode(std::uint64_t begin, std::uint64_t end, const Take& take) {
    file_.read(begin, end, [&](std::string_view bytes) { decoder_->decode(bytes, take); });
  }

  ReadOnlyFile& file_;
  const bool compressed_;
  std::optional<ZstdDecoder> decoder_;
  std::uint64_t at_;  // where the decoder stopped, or is to start
};

// Reads `path` (a regular file, not through a symbolic link) as JSON, if it is not too
// large to read whole.
boost::json::value read_json_file(const std::filesystem::path& path) {
  ReadOnlyFile file(open_inside(path.parent_path(), path.filename()));
  const std::uint64_t size = file.size();
  if (size > max_document_bytes) {
    throw std::runtime_error("the document holds " + std::to_string(size) + " bytes, more than the " +
                             std::to_string(max_document_bytes) + " a document is read for");
  }
  std::string text;
  file.read(0, size, [&](std::string_view bytes) { text.append(bytes); });
  return boost::json::parse(text);
}

FileCheck check_file(const std::filesystem::path& output_dir, const detail::FileClaim& claim) {
  FileCheck check{.file = claim.file,
                  .start_offset = claim.start_offset,
                  .persisted_end = claim.persisted_end,
                  .persisted_records = claim.persisted_records,
                  .fragments_isolated = claim.fragments_isolated};
  if (claim.inconsistency) {
    check.error = "inconsistent: " + *claim.inconsistency;
    return check;
  }
  if (claim.deleted) {
    check.deleted = true;
    return check;
  }
  try {
    ReadOnlyFile file(open_inside(output_dir, claim.file));
    check.size = file.size();
    if (check.size < check.persisted_end) {
      check.error = "the file holds " + std::to_string(check.size) + " bytes, fewer than the " +
                    std::to_string(check.persisted_end) + " claimed";
      return check;
    }
    detail::LineScan records(detail::LineScan::check_json);
    detail::LineScan unknown(detail::LineScan::count_only);
    const bool compressed = is_compressed_file(claim.file);
    RangeReader ranges(file, compressed, check.start_offset);
    // Persisted bytes end where the writer's appends do; an unknown extent may not.
    const auto scan_persisted = [&](std::uint64_t begin, std::uint64_t end) {
      if (!ranges.feed(begin, end, records, RangeReader::TornEnd::fails)) {
        throw std::runtime_error("the persisted bytes [" + std::to_string(begin) + ", " + std::to_string(end) +
                                 ") end inside a piece of a zstd frame");
      }
    };
    std::uint64_t at = check.start_offset;
    for (const detail::ExtentClaim& extent : claim.unknown_extents) {
      if (extent.start >= check.persisted_end) break;
      scan_persisted(at, extent.start);
      at = std::min(extent.start + extent.landed, check.persisted_end);
      ranges.feed(extent.start, at, unknown, RangeReader::TornEnd::counts_a_line);
    }
    scan_persisted(at, check.persisted_end);
    check.records = records.parsed();
    check.bad_lines = records.unparsed();
    check.unknown_lines = unknown.lines();
  } catch (const std::exception& error) {
    check.error = error.what();
  }
  return check;
}

// [begin, end) ranges of a file that some document claims.
using Claims = std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>>;

void add_claims(const detail::BooksDocument& document, Claims& claims) {
  for (const std::string& file : document.deleting) {
    claims[file].emplace_back(0, std::numeric_limits<std::uint64_t>::max());
  }
  for (const detail::FileClaim& claim : document.files) {
    if (claim.deleted || claim.inconsistency) continue;
    auto& ranges = claims[claim.file];
    ranges.emplace_back(claim.start_offset, claim.persisted_end);
    for (const detail::ExtentClaim& extent : claim.unknown_extents) {
      ranges.emplace_back(extent.start, extent.start + extent.landed);
    }
  }
}

UnaccountedBytes measure_unclaimed(const std::filesystem::path& output_dir, std::string file,
                                   std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges) {
  UnaccountedBytes unclaimed{.file = std::move(file)};
  ReadOnlyFile data(open_inside(output_dir, unclaimed.file));
  unclaimed.size = data.size();
  std::sort(ranges.begin(), ranges.end());
  detail::LineScan lines(detail::LineScan::count_only);
  RangeReader reader(data, is_compressed_file(unclaimed.file), 0);
  const auto gap = [&](std::uint64_t begin, std::uint64_t end) {
    if (begin >= end) return;
    unclaimed.unclaimed_bytes += end - begin;
    if (!reader.feed(begin, end, lines, RangeReader::TornEnd::is_one_tail)) ++unclaimed.torn_frames;
  };
  std::uint64_t at = 0;
  for (const auto& [begin, end] : ranges) {
    gap(at, std::min(begin, unclaimed.size));
    at = std::max(at, std::min(end, unclaimed.size));
  }
  gap(at, unclaimed.size);
  unclaimed.whole_lines = lines.terminated();
  unclaimed.cut_lines = lines.cut();
  return unclaimed;
}

bool is_plain_file(const std::filesystem::directory_entry& entry) {
  return std::filesystem::is_regular_file(entry.symlink_status());
}

}  // namespace

bool BooksCheck::verified() const noexcept {
  return !error && std::all_of(files.begin(), files.end(), [](const FileCheck& file) { return file.verified(); });
}

bool Reconciliation::all_books_balance() const noexcept {
  return std::all_of(generations.begin(), generations.end(), [](const BooksCheck& books) { return books.balanced; });
}

bool Reconciliation::all_files_verify() const noexcept {
  return std::all_of(generations.begin(), generations.end(), [](const BooksCheck& books) { return books.verified(); }) &&
         std::none_of(unaccounted.begin(), unaccounted.end(), [](const UnaccountedBytes& bytes) { return bytes.error; });
}

namespace {

BooksCheck check_document(const std::filesystem::path& output_dir, const detail::BooksDocument& document) {
  BooksCheck books{.schema = document.schema,
                   .generation = document.generation,
                   .closed = document.closed,
                   .submitted = document.submitted,
                   .persisted = document.persisted,
                   .dropped = document.dropped,
                   .unknown = document.unknown,
                   .pending = document.pending};
  // Sums in 128 bits: counts near the largest cannot wrap into a balance.
  unsigned __int128 in_files = 0;
  for (const detail::FileClaim& claim : document.files) {
    books.files.push_back(check_file(output_dir, claim));
    in_files += claim.persisted_records;
  }
  const unsigned __int128 accounted = static_cast<unsigned __int128>(books.persisted) + books.dropped + books.unknown +
                                      books.pending;
  books.balanced = books.submitted == accounted && (!books.closed || books.pending == 0) && in_files == books.persisted;
  return books;
}

}  // namespace

BooksCheck verify_books(const std::filesystem::path& output_dir, const boost::json::value& document) {
  try {
    return check_document(output_dir, detail::read_books_document(document));
  } catch (const std::exception& error) {
    BooksCheck books;
    books.error = error.what();
    return books;
  }
}

Reconciliation reconcile(const std::filesystem::path& output_dir) {
  Reconciliation reconciliation;
  Claims claims;
  const std::filesystem::path books_dir = output_dir / field::directory;
  std::vector<std::filesystem::path> documents;
  if (std::filesystem::is_directory(std::filesystem::symlink_status(books_dir))) {
    for (const auto& entry : std::filesystem::directory_iterator(books_dir)) {
      const std::filesystem::path& path = entry.path();
      if (is_plain_file(entry) && path.extension() == ".json" && !path.filename().string().starts_with(".")) {
        documents.push_back(path);
      }
    }
  }
  std::sort(documents.begin(), documents.end());
  // Every document read before any file, so that claims across documents are checked
  // against one another first.
  std::vector<std::optional<detail::BooksDocument>> read(documents.size());
  std::vector<std::string> errors(documents.size()), names, whole_names;
  std::vector<detail::BooksDocument*> whole;
  for (std::size_t d = 0; d < documents.size(); ++d) {
    names.push_back(documents[d].lexically_relative(output_dir).generic_string());
    try {
      read[d] = detail::read_books_document(read_json_file(documents[d]));
      whole.push_back(&*read[d]);
      whole_names.push_back(names.back());
    } catch (const std::exception& error) {
      errors[d] = error.what();
    }
  }
  detail::mark_claimed_elsewhere(whole, whole_names);
  for (std::size_t d = 0; d < documents.size(); ++d) {
    BooksCheck books;
    if (read[d]) {
      books = check_document(output_dir, *read[d]);
      add_claims(*read[d], claims);
    } else {
      books.error = errors[d];
    }
    books.document = names[d];
    reconciliation.generations.push_back(std::move(books));
  }
  std::vector<std::filesystem::path> data_files;
  for (auto entry = std::filesystem::recursive_directory_iterator(output_dir);
       entry != std::filesystem::recursive_directory_iterator(); ++entry) {
    if (entry->path() == books_dir) {
      entry.disable_recursion_pending();
    } else if (is_plain_file(*entry) && is_data_file(entry->path())) {
      data_files.push_back(entry->path());
    }
  }
  std::sort(data_files.begin(), data_files.end());
  for (const std::filesystem::path& path : data_files) {
    const std::string file = path.lexically_relative(output_dir).generic_string();
    const auto claimed = claims.find(file);
    try {
      UnaccountedBytes unclaimed =
          measure_unclaimed(output_dir, file, claimed == claims.end() ? decltype(claimed->second){} : claimed->second);
      if (unclaimed.unclaimed_bytes != 0) reconciliation.unaccounted.push_back(std::move(unclaimed));
    } catch (const std::exception& error) {
      reconciliation.unaccounted.push_back({.file = file, .error = error.what()});
    }
  }
  return reconciliation;
}

boost::json::value to_json(const Reconciliation& reconciliation) {
  boost::json::array generations;
  for (const BooksCheck& books : reconciliation.generations) {
    boost::json::array files;
    for (const FileCheck& file : books.files) {
      files.push_back({{"file", file.file},
                       {"start_offset", file.start_offset},
                       {"persisted_end", file.persisted_end},
                       {"persisted_records", file.persisted_records},
                       {"fragments_isolated", file.fragments_isolated},
                       {"size", file.size},
                       {"records", file.records},
                       {"bad_lines", file.bad_lines},
                       {"unknown_lines", file.unknown_lines},
                       {"deleted", file.deleted},
                       {"verified", file.verified()},
                       {"error", file.error ? boost::json::value(*file.error) : boost::json::value(nullptr)}});
    }
    generations.push_back({{"document", books.document.generic_string()},
                           {"schema", books.schema},
                           {"generation", books.generation},
                           {"closed", books.closed},
                           {"balanced", books.balanced},
                           {"verified", books.verified()},
                           {"counts",
                            {{"submitted", books.submitted},
                             {"persisted", books.persisted},
                             {"dropped", books.dropped},
                             {"unknown", books.unknown},
                             {"pending", books.pending}}},
                           {"files", std::move(files)},
                           {"error", books.error ? boost::json::value(*books.error) : boost::json::value(nullptr)}});
  }
  boost::json::array unaccounted;
  for (const UnaccountedBytes& bytes : reconciliation.unaccounted) {
    unaccounted.push_back({{"file", bytes.file},
                           {"size", bytes.size},
                           {"unclaimed_bytes", bytes.unclaimed_bytes},
                           {"whole_lines", bytes.whole_lines},
                           {"cut_lines", bytes.cut_lines},
                           {"torn_frames", bytes.torn_frames},
                           {"error", bytes.error ? boost::json::value(*bytes.error) : boost::json::value(nullptr)}});
  }
  return {{"all_books_balance", reconciliation.all_books_balance()},
          {"all_files_verify", reconciliation.all_files_verify()},
          {"generations", std::move(generations)},
          {"unaccounted", std::move(unaccounted)}};
}

}  // namespace jsonl
