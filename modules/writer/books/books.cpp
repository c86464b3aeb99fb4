module;

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <ctime>
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
import :posix_file;

namespace jsonl::detail {
namespace {

constexpr std::string_view schema = "jsonl-writer-books/1";
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

// "2026-01-01T00:00:00.123456Z"
std::string iso_utc(std::chrono::system_clock::time_point at) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(at.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1'000'000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[40];
  const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + length, sizeof text - length, ".%06lldZ", static_cast<long long>(micros % 1'000'000));
  return text;
}

}  // namespace

WriterBooks::WriterBooks(const WriterOptions& options)
    : options_(options),
      generation_(make_generation()),
      document_file_(*options.output_dir / "_writer" / (generation_ + ".json")),
      started_at_(options.clock()) {}

void WriterBooks::book(const CommitOutcome& outcome) {
  if (outcome.error) {
    ++failed_appends_;
    last_error_ = *outcome.error;
  }
  if (!outcome.size_before) return;  // nothing of it reached the file
  FileBooks* books = find(outcome.file);
  if (!books) {
    books = &files_.emplace_back();
    books->file = outcome.file.lexically_relative(*options_.output_dir).generic_string();
    books->start_offset = books->persisted_end = *outcome.size_before;
  }
  if (outcome.fragment_isolated) ++books->fragments_isolated;
  if (outcome.persisted()) {
    books->persisted_end = *outcome.payload_offset + outcome.bytes;
    books->persisted_records += outcome.records;
  } else if (outcome.landed.value_or(0) != 0) {
    books->unknown_extents.push_back({*outcome.payload_offset, *outcome.landed, outcome.touched});
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
  if (FileBooks* books = find(file)) books->deleted = true;
}

std::string WriterBooks::document(const BookCounts& counts, bool closed) const {
  boost::json::array files;
  for (const FileBooks& books : files_) {
    boost::json::array extents;
    for (const Extent& extent : books.unknown_extents) {
      extents.push_back({{"start", extent.start}, {"landed", extent.landed}, {"records", extent.records}});
    }
    files.push_back({{"file", books.file},
                     {"start_offset", books.start_offset},
                     {"persisted_end", books.persisted_end},
                     {"persisted_records", books.persisted_records},
                     {"fragments_isolated", books.fragments_isolated},
                     {"unknown_extents", std::move(extents)},
                     {"deleted", books.deleted}});
  }
  boost::json::object dropped{{"queue_full", counts.queue_full},
                              {"malformed", counts.malformed},
                              {"serialize_error", counts.serialize_error},
                              {"write_error", counts.write_error},
                              {"unexpected_write", counts.unexpected_write},
                              {"abandoned", counts.abandoned}};
  const std::uint64_t classified = counts.persisted + counts.dropped() + counts.unknown;
  boost::json::object document{
      {"schema", schema},
      {"generation", generation_},
      {"subject", options_.subject},
      {"host", host_name()},
      {"pid", ::getpid()},
      {"started_at", iso_utc(started_at_)},
      {"published_at", iso_utc(options_.clock())},
      {"sequence", publications_.load()},
      {"closed", closed},
      {"durability", durability_meaning},
      {"counts",
       {{"submitted", counts.submitted},
        {"persisted", counts.persisted},
        {"dropped", std::move(dropped)},
        {"unknown", counts.unknown},
        {"pending", counts.submitted - classified}}},
      {"attributes", {{"sanitized", counts.sanitized}}},
      {"files", std::move(files)},
      {"errors",
       {{"failed_appends", failed_appends_},
        {"last_error", last_error_ ? boost::json::value(*last_error_) : boost::json::value(nullptr)},
        {"publication_errors", publication_errors_.load()}}}};
  return boost::json::serialize(document) + "\n";
}

// Temporary file, fsync, rename over the last document, directory fsync: a reader sees
// the previous document or this one, whole.
void WriterBooks::write_document(const std::string& document) const {
  const FileCalls& calls = *options_.durability.calls;
  const std::filesystem::path directory = document_file_.parent_path();
  std::error_code created;
  std::filesystem::create_directories(directory, created);
  if (created) throw std::system_error(created, "create directory " + directory.string());
  const std::filesystem::path partial = directory / ("." + generation_ + ".json.partial");
  {
    const FileDescriptor out(partial, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW);
    for (std::string_view rest = document; !rest.empty();) {
      const ssize_t written = calls.write(out.get(), rest, partial);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) throw_errno("write", partial);
      rest.remove_prefix(static_cast<std::size_t>(written));
    }
    if (calls.fsync(out.get(), partial) != 0) throw_errno("fsync", partial);
  }
  if (calls.rename(partial, document_file_) != 0) throw_errno("rename", partial);
  const FileDescriptor folder(directory, O_RDONLY | O_DIRECTORY);
  if (calls.fsync(folder.get(), directory) != 0) throw_errno("fsync", directory);
}

bool WriterBooks::publish_if_due(const BookCounts& counts, bool urgent, bool closed, std::string& error) {
  if (closed_) return true;
  const Key key{counts.submitted, counts.persisted, counts.dropped(), counts.unknown, publication_errors_.load()};
  const auto now = std::chrono::steady_clock::now();
  if (!closed) {
    if (published_ == key) return true;
    if (!urgent && publications_ != 0 && now - last_attempt_ < options_.durability.publish_interval) return true;
  }
  last_attempt_ = now;
  ++publications_;
  try {
    write_document(document(counts, closed));
  } catch (const std::exception& failure) {
    ++publication_errors_;
    error = failure.what();
    return false;
  }
  published_ = key;
  closed_ = closed;
  return true;
}

}  // namespace jsonl::detail
