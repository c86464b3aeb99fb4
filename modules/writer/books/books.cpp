module;

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>
#include <vector>

module jsonl.writer;

import :books;
import :books_schema;
import :posix_file;

namespace jsonl::detail {
namespace {

namespace field = books_schema;

// The books' times: "2026-01-01T00:00:00.123456Z".
constexpr std::string_view iso_utc = "%Y-%m-%dT%H:%M:%S.%fZ";

constexpr std::string_view durability_meaning =
    "a record is persisted once the append holding it, its newline included, was written "
    "and fsync()ed without error";

std::string make_generation() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  char random[9];
  std::snprintf(random, sizeof random, "%08x", static_cast<unsigned>(std::random_device{}()));
  return std::to_string(::getpid()) + "-" + std::to_string(nanoseconds) + "-" + random;
}

}  // namespace

WriterBooks::WriterBooks(const WriterOptions& options, Accounts& accounts)
    : options_(options),
      accounts_(accounts),
      generation_(make_generation()),
      document_file_((options.durability.books_dir ? *options.durability.books_dir
                                                   : *options.output_dir / books_schema::directory) /
                     (generation_ + ".json")),
      started_at_(options.clock()) {}

void WriterBooks::book(const AppendOutcome& outcome) {
  if (outcome.error) {
    ++failed_appends_;
    last_error_ = *outcome.error;
  }
  // Files have books of their own once something of an append reached them.
  if (!options_.output_dir || !outcome.placement.size_before) return;
  FileBooks* books = find(outcome.file);
  if (!books) {
    books = &files_.emplace_back();
    books->file = outcome.file.lexically_relative(*options_.output_dir).generic_string();
    books->start_offset = books->persisted_end = *outcome.placement.size_before;
  }
  if (outcome.placement.fragment_isolated) ++books->fragments_isolated;
  if (outcome.succeeded()) {
    books->persisted_end = *outcome.placement.payload_offset + outcome.bytes;
    books->persisted_records += outcome.records;
  } else if (outcome.landed.value_or(0) != 0) {
    books->unknown_extents.push_back({*outcome.placement.payload_offset, *outcome.landed, outcome.touched});
  }
}

WriterBooks::FileBooks* WriterBooks::find(const std::filesystem::path& file) {
  const std::string name = file.lexically_relative(*options_.output_dir).generic_string();
  for (FileBooks& books : files_) {
    if (books.file == name) return &books;
  }
  return nullptr;
}

void WriterBooks::deleted(const std::filesystem::path& file) {
  FileBooks* books = find(file);
  if (!books) return;
  ++retired_.files;
  retired_.records += books->persisted_records;
  retired_.bytes += books->persisted_end - books->start_offset;
  deleting_.push_back(std::move(books->file));
  files_.erase(files_.begin() + (books - files_.data()));
  ++deletions_;
}

std::string WriterBooks::document(const WriterStats& counts, bool closed) const {
  boost::json::array shards;
  for (const FileBooks& books : files_) {
    boost::json::array extents;
    for (const Extent& extent : books.unknown_extents) {
      extents.push_back(
          {{field::start, extent.start}, {field::landed, extent.landed}, {field::records, extent.records}});
    }
    shards.push_back({{field::file, books.file},
                     {field::start_offset, books.start_offset},
                     {field::persisted_end, books.persisted_end},
                     {field::persisted_records, books.persisted_records},
                     {field::fragments_isolated, books.fragments_isolated},
                     {field::unknown_extents, std::move(extents)}});
  }
  boost::json::array deleting(deleting_.begin(), deleting_.end());
  boost::json::object balance;
  boost::json::object attributes;
  boost::json::object errors{{field::failed_appends, failed_appends_},
                             {field::last_error, last_error_ ? boost::json::value(*last_error_) : boost::json::value()}};
  std::uint64_t classified = counts.written + counts.unknown;
  for (const CounterInfo& counter : counters) {
    switch (counter.books_section) {
      case BooksSection::none:
        break;
      case BooksSection::counts:
        balance[counter.books_name] = counts[counter.counter];
        break;
      case BooksSection::attributes:
        attributes[counter.books_name] = counts[counter.counter];
        break;
      case BooksSection::errors:
        errors[counter.books_name] = counts[counter.counter];
        break;
    }
    if (counter.counter != Counter::written) continue;
    // The records of the shards; those of deleted files are dropped for retention.
    balance[counter.books_name] = counts.written - retired_.records;
    // The drops follow the persisted records, as in the reference's documents.
    boost::json::object& dropped = balance[field::dropped].emplace_object();
    for (const DropReasonInfo& reason : drop_reasons) {
      if (!reason.booked) continue;
      dropped[reason.name] = counts.dropped(reason.reason);
      classified += counts.dropped(reason.reason);
    }
    dropped[field::retention] = retired_.records;
  }
  balance[field::pending] = counts.submitted - classified;
  boost::json::object document{
      {field::schema, books_schema::id},
      {field::generation, generation_},
      {field::subject, options_.subject},
      {field::host, host_name()},
      {field::pid, ::getpid()},
      {field::started_at, utc_text(started_at_, iso_utc)},
      {field::published_at, utc_text(options_.clock(), iso_utc)},
      {field::sequence, attempts_},
      {field::closed, closed},
      {field::durability, durability_meaning},
      {field::counts, std::move(balance)},
      {field::attributes, std::move(attributes)},
      {field::shards, std::move(shards)},
      {field::deleting, std::move(deleting)},
      {field::retention,
       {{field::retention_files, retired_.files},
        {field::retention_records, retired_.records},
        {field::retention_bytes, retired_.bytes}}},
      {field::errors, std::move(errors)}};
  return boost::json::serialize(document) + "\n";
}

// Temporary file, fsync, rename over the last document, directory fsync: a reader sees
// the previous document or this one, whole.
void WriterBooks::write_document(const std::string& document) const {
  const FileCalls& calls = *options_.durability.calls;
  const std::filesystem::path directory = document_file_.parent_path();
  if (calls.make_directories(directory)) {
    // A new directory's name is durable only once its parent is fsynced: without that a
    // crash could take the books away from files that outlive it.
    const std::filesystem::path parent = directory.parent_path();
    const FileDescriptor above(parent, O_RDONLY | O_DIRECTORY);
    if (calls.fsync(above.get(), parent) != 0) throw_errno("fsync", parent);
  }
  const std::filesystem::path partial = directory / ("." + generation_ + ".json.partial");
  {
    const FileDescriptor out(calls, partial, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW);
    if (write_fully(calls, out.get(), document, partial) != document.size()) throw_errno("write", partial);
    if (calls.fsync(out.get(), partial) != 0) throw_errno("fsync", partial);
  }
  if (calls.rename(partial, document_file_) != 0) throw_errno("rename", partial);
  const FileDescriptor folder(directory, O_RDONLY | O_DIRECTORY);
  if (calls.fsync(folder.get(), directory) != 0) throw_errno("fsync", directory);
}

bool WriterBooks::publish_if_due(const WriterStats& counts, bool urgent, bool closed, std::string& error) {
  if (closed_) return true;
  const Key key{counts.submitted, counts.written, counts.dropped(), counts.unknown, counts.publication_errors,
                deletions_};
  const auto now = std::chrono::steady_clock::now();
  if (!closed) {
    if (published_ == key) return true;
    if (!urgent && attempts_ != 0 && now - last_attempt_ < options_.durability.publish_interval) return true;
  }
  last_attempt_ = now;
  ++attempts_;
  try {
    write_document(document(counts, closed));
  } catch (const std::exception& failure) {
    accounts_.add(Counter::publication_errors);
    error = failure.what();
    return false;
  }
  accounts_.add(Counter::publications);
  published_ = key;
  deletions_published_ = deletions_;
  closed_ = closed;
  return true;
}

}  // namespace jsonl::detail
