module;

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_to.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>
#include <utility>
#include <vector>

module jsonl.writer;

import :verify;
import :books_schema;
import :posix_file;

namespace jsonl {
namespace {

namespace field = detail::books_schema;
constexpr std::uint64_t chunk_bytes = 1 << 20;

class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::filesystem::path& path) : fd_(path, O_RDONLY) {}

  std::uint64_t size() const {
    const off_t end = ::lseek(fd_.get(), 0, SEEK_END);
    if (end < 0) throw std::system_error(errno, std::generic_category(), "lseek");
    return static_cast<std::uint64_t>(end);
  }

  // Calls `take` with [begin, end) in pieces of at most chunk_bytes.
  template <class Take>
  void read(std::uint64_t begin, std::uint64_t end, Take&& take) const {
    std::string buffer;
    while (begin < end) {
      buffer.resize(static_cast<std::size_t>(std::min(chunk_bytes, end - begin)));
      const ssize_t got = ::pread(fd_.get(), buffer.data(), buffer.size(), static_cast<off_t>(begin));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw std::system_error(errno, std::generic_category(), "pread");
      if (got == 0) throw std::runtime_error("the file ends before the range it is read for");
      take(std::string_view(buffer.data(), static_cast<std::size_t>(got)));
      begin += static_cast<std::uint64_t>(got);
    }
  }

 private:
  detail::FileDescriptor fd_;
};

// Splits bytes fed piece by piece into lines; empty lines are not counted.
class LineTally {
 public:
  // `line` is called with each line, its '\n' left out; a piece left unterminated
  // when a segment ends is a line of its own.
  template <class Line>
  void feed(std::string_view bytes, Line&& line) {
    for (std::size_t newline; (newline = bytes.find('\n')) != std::string_view::npos;) {
      partial_.append(bytes.substr(0, newline));
      bytes.remove_prefix(newline + 1);
      finish(line, true);
    }
    partial_.append(bytes);
  }
  template <class Line>
  void end_segment(Line&& line) {
    finish(line, false);
  }

 private:
  template <class Line>
  void finish(Line& line, bool terminated) {
    if (!partial_.empty()) line(std::string_view(partial_), terminated);
    partial_.clear();
  }
  std::string partial_;
};

std::uint64_t number(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  if (!value) throw std::runtime_error("no \"" + std::string(key) + "\"");
  return value->to_number<std::uint64_t>();
}

const boost::json::object& object_at(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  if (!value || !value->is_object()) throw std::runtime_error("no object \"" + std::string(key) + "\"");
  return value->get_object();
}

const boost::json::array& array_at(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  if (!value || !value->is_array()) throw std::runtime_error("no array \"" + std::string(key) + "\"");
  return value->get_array();
}

struct Extent {
  std::uint64_t start = 0;
  std::uint64_t landed = 0;
};

std::vector<Extent> extents_of(const boost::json::object& file) {
  std::vector<Extent> extents;
  for (const boost::json::value& extent : array_at(file, field::unknown_extents)) {
    extents.push_back({number(extent.as_object(), field::start), number(extent.as_object(), field::landed)});
  }
  std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) { return a.start < b.start; });
  return extents;
}

FileCheck check_file(const std::filesystem::path& output_dir, const boost::json::object& claim) {
  FileCheck check;
  check.file = boost::json::value_to<std::string>(claim.at(field::file));
  check.start_offset = number(claim, field::start_offset);
  check.persisted_end = number(claim, field::persisted_end);
  check.persisted_records = number(claim, field::persisted_records);
  check.fragments_isolated = number(claim, field::fragments_isolated);
  const std::vector<Extent> extents = extents_of(claim);
  if (const boost::json::value* deleted = claim.if_contains(field::deleted); deleted && deleted->as_bool()) {
    check.deleted = true;
    return check;
  }
  try {
    const ReadOnlyFile file(output_dir / check.file);
    check.size = file.size();
    if (check.size < check.persisted_end) {
      check.error = "the file holds " + std::to_string(check.size) + " bytes, fewer than the " +
                    std::to_string(check.persisted_end) + " claimed";
      return check;
    }
    LineTally lines;
    const auto record = [&](std::string_view line, bool) {
      boost::system::error_code error;
      boost::json::parse(line, error);
      ++(error ? check.bad_lines : check.records);
    };
    const auto unknown = [&](std::string_view, bool) { ++check.unknown_lines; };
    std::uint64_t at = check.start_offset;
    for (const Extent& extent : extents) {
      if (extent.start < at || extent.start >= check.persisted_end) continue;
      file.read(at, extent.start, [&](std::string_view bytes) { lines.feed(bytes, record); });
      lines.end_segment(record);
      at = std::min(extent.start + extent.landed, check.persisted_end);
      file.read(extent.start, at, [&](std::string_view bytes) { lines.feed(bytes, unknown); });
      lines.end_segment(unknown);
    }
    file.read(at, check.persisted_end, [&](std::string_view bytes) { lines.feed(bytes, record); });
    lines.end_segment(record);
  } catch (const std::exception& error) {
    check.error = error.what();
  }
  return check;
}

boost::json::value read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return boost::json::parse(text);
}

// [begin, end) ranges of a file that some document claims.
using Claims = std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>>;

void add_claims(const boost::json::value& document, Claims& claims) {
  for (const boost::json::value& file : array_at(document.as_object(), field::files)) {
    const boost::json::object& claim = file.as_object();
    if (const boost::json::value* deleted = claim.if_contains(field::deleted); deleted && deleted->as_bool()) continue;
    auto& ranges = claims[boost::json::value_to<std::string>(claim.at(field::file))];
    ranges.emplace_back(number(claim, field::start_offset), number(claim, field::persisted_end));
    for (const Extent& extent : extents_of(claim)) ranges.emplace_back(extent.start, extent.start + extent.landed);
  }
}

UnaccountedBytes measure_unclaimed(const std::filesystem::path& path, std::string file,
                                   std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges) {
  UnaccountedBytes unclaimed{.file = std::move(file)};
  const ReadOnlyFile data(path);
  unclaimed.size = data.size();
  std::sort(ranges.begin(), ranges.end());
  LineTally lines;
  const auto line = [&](std::string_view, bool terminated) { ++(terminated ? unclaimed.whole_lines : unclaimed.cut_lines); };
  const auto gap = [&](std::uint64_t begin, std::uint64_t end) {
    if (begin >= end) return;
    unclaimed.unclaimed_bytes += end - begin;
    data.read(begin, end, [&](std::string_view bytes) { lines.feed(bytes, line); });
    lines.end_segment(line);
  };
  std::uint64_t at = 0;
  for (const auto& [begin, end] : ranges) {
    gap(at, std::min(begin, unclaimed.size));
    at = std::max(at, std::min(end, unclaimed.size));
  }
  gap(at, unclaimed.size);
  return unclaimed;
}

}  // namespace

bool BooksCheck::verified() const noexcept {
  return !error && std::all_of(files.begin(), files.end(), [](const FileCheck& file) { return file.verified(); });
}

bool Reconciliation::all_books_balance() const noexcept {
  return std::all_of(generations.begin(), generations.end(), [](const BooksCheck& books) { return books.balanced; });
}

bool Reconciliation::all_files_verify() const noexcept {
  return std::all_of(generations.begin(), generations.end(), [](const BooksCheck& books) { return books.verified(); });
}

BooksCheck verify_books(const std::filesystem::path& output_dir, const boost::json::value& document) {
  BooksCheck books;
  try {
    const boost::json::object& top = document.as_object();
    if (const boost::json::value* schema = top.if_contains(field::schema); !schema || !schema->is_string() || schema->get_string() != field::id) {
      throw std::runtime_error("not a document of schema " + std::string(field::id));
    }
    books.generation = boost::json::value_to<std::string>(top.at(field::generation));
    books.closed = top.at(field::closed).as_bool();
    const boost::json::object& counts = object_at(top, field::counts);
    books.submitted = number(counts, field::submitted);
    books.persisted = number(counts, field::persisted);
    for (const auto& [reason, count] : object_at(counts, field::dropped)) books.dropped += count.to_number<std::uint64_t>();
    books.unknown = number(counts, field::unknown);
    books.pending = number(counts, field::pending);
    std::uint64_t in_files = 0;
    for (const boost::json::value& file : array_at(top, field::files)) {
      books.files.push_back(check_file(output_dir, file.as_object()));
      in_files += books.files.back().persisted_records;
    }
    books.balanced = books.submitted == books.persisted + books.dropped + books.unknown + books.pending &&
                     (!books.closed || books.pending == 0) && in_files == books.persisted;
  } catch (const std::exception& error) {
    books.error = error.what();
    books.balanced = false;
  }
  return books;
}

Reconciliation reconcile(const std::filesystem::path& output_dir) {
  Reconciliation reconciliation;
  Claims claims;
  const std::filesystem::path books_dir = output_dir / field::directory;
  std::vector<std::filesystem::path> documents;
  if (std::filesystem::is_directory(books_dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(books_dir)) {
      const std::filesystem::path& path = entry.path();
      if (entry.is_regular_file() && path.extension() == ".json" && !path.filename().string().starts_with(".")) {
        documents.push_back(path);
      }
    }
  }
  std::sort(documents.begin(), documents.end());
  for (const std::filesystem::path& path : documents) {
    BooksCheck books;
    try {
      const boost::json::value document = read_json_file(path);
      books = verify_books(output_dir, document);
      if (!books.error) add_claims(document, claims);
    } catch (const std::exception& error) {
      books.error = error.what();
    }
    books.document = path.lexically_relative(output_dir);
    reconciliation.generations.push_back(std::move(books));
  }
  std::vector<std::filesystem::path> data_files;
  for (auto entry = std::filesystem::recursive_directory_iterator(output_dir);
       entry != std::filesystem::recursive_directory_iterator(); ++entry) {
    if (entry->path() == books_dir) {
      entry.disable_recursion_pending();
    } else if (entry->is_regular_file() && entry->path().extension() == ".jsonl") {
      data_files.push_back(entry->path());
    }
  }
  std::sort(data_files.begin(), data_files.end());
  for (const std::filesystem::path& path : data_files) {
    const std::string file = path.lexically_relative(output_dir).generic_string();
    const auto claimed = claims.find(file);
    UnaccountedBytes unclaimed =
        measure_unclaimed(path, file, claimed == claims.end() ? decltype(claimed->second){} : claimed->second);
    if (unclaimed.unclaimed_bytes != 0) reconciliation.unaccounted.push_back(std::move(unclaimed));
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
                           {"cut_lines", bytes.cut_lines}});
  }
  return {{"all_books_balance", reconciliation.all_books_balance()},
          {"all_files_verify", reconciliation.all_files_verify()},
          {"generations", std::move(generations)},
          {"unaccounted", std::move(unaccounted)}};
}

}  // namespace jsonl
