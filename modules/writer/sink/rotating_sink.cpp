module;

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <set>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <unistd.h>
#include <vector>
#include <utility>

module jsonl.writer;

import :rotating_sink;
import :posix_file;

namespace jsonl::detail {

RotatingSink::RotatingSink(const WriterOptions& options, Sink& inner, Accounts& accounts)
    : options_(options),
      inner_(inner),
      accounts_(accounts),
      prefix_(options.file_stem + "-" + host_name() + "-" + std::to_string(::getpid()) + "-") {}

std::filesystem::path RotatingSink::name_file(std::chrono::system_clock::time_point now) {
  const std::string timestamp = utc_text(now, "%Y%m%dT%H%M%SZ");
  const std::filesystem::path& directory = *options_.output_dir;
  for (unsigned taken = 0;; ++taken) {
    const std::string suffix = taken == 0 ? "" : "-" + std::to_string(taken);
    std::filesystem::path file = directory / (prefix_ + timestamp + suffix + options_.compression.file_extension());
    // Only a rotation must find a name no file has, nor any this writer deleted; the
    // first plain file keeps the reference's name, and appends to a file already there,
    // as the reference does. A compressed one never does: a predecessor's torn frame
    // would end every reader's decoding of what follows it.
    const bool may_append = kept_.empty() && !options_.compression.enabled();
    std::error_code ignored;
    if (may_append || (!named_.contains(file) && !std::filesystem::exists(file, ignored))) {
      named_.insert(file);
      return file;
    }
  }
}

std::filesystem::path RotatingSink::start() {
  started_at_ = options_.clock();
  std::filesystem::path file = name_file(started_at_);
  kept_.push_back(file);
  const std::lock_guard lock(mutex_);
  current_ = file;
  accounts_.add(Counter::files_started);
  return file;
}

const std::filesystem::path& RotatingSink::file_for(std::size_t bytes) {
  const auto now = options_.clock();
  // What a compressed append adds on disk is known only once it is compressed in its
  // file's frame: a compressed file is left once it holds the limit.
  const std::size_t adds = options_.compression.enabled() ? 1 : bytes;
  const bool too_big = options_.max_file_bytes && size_ > 0 && size_ + adds > *options_.max_file_bytes;
  const bool too_old = options_.max_file_age && now - started_at_ >= *options_.max_file_age;
  const bool requested = take_requests() && size_ > 0;
  if (!too_big && !too_old && !torn_ && !requested) return kept_.back();

  std::filesystem::path file = name_file(now);
  started_at_ = now;
  size_ = 0;
  torn_ = false;
  kept_.push_back(file);
  while (options_.max_files && kept_.size() > *options_.max_files) {
    expired_.push_back(std::move(kept_.front()));
    kept_.pop_front();
  }
  const std::lock_guard lock(mutex_);
  current_ = std::move(file);
  accounts_.add(Counter::files_started);
  return kept_.back();
}

bool RotatingSink::take_requests() {
  if (!options_.rotation_requests) return false;
  const std::uint64_t made = options_.rotation_requests->made();
  return std::exchange(requests_seen_, made) != made;
}

void RotatingSink::routed_to(const std::filesystem::path& file, std::chrono::system_clock::time_point now) {
  if (routed_let_go_.contains(file)) {
    throw std::system_error(std::make_error_code(std::errc::no_such_file_or_directory),
                            "retention deleted '" + file.string() + "' once it was idle for " +
                                std::to_string(options_.max_routed_file_idle->count()) +
                                " s; an append routed to it is refused");
  }
  routed_.insert_or_assign(file, now);
  if (now < next_idle_check_) return;
  next_idle_check_ = now + std::chrono::seconds(1);
  for (auto routed = routed_.begin(); routed != routed_.end();) {
    if (now - routed->second < *options_.max_routed_file_idle) {
      ++routed;
      continue;
    }
    expired_.push_back(routed->first);
    routed_let_go_.insert(routed->first);
    routed = routed_.erase(routed);
  }
}

void RotatingSink::append(const FileAppend& append, AppendOutcome& outcome) {
  if (!append.file.empty()) {
    outcome.file = append.file;
    if (options_.max_routed_file_idle) routed_to(append.file, options_.clock());
    return inner_.append(append, outcome);
  }
  outcome.file = file_for(append.bytes.size());
  inner_.append(append, outcome);
  // Each append is measured as it goes, so that rotation splits even one commit.
  // A sink that does not measure its file leaves the offset empty: it grew by the append.
  if (outcome.succeeded()) size_ = outcome.placement.payload_offset ? outcome.end() : size_ + outcome.bytes_appended();
  torn_ = torn_ || outcome.torn;
}

std::optional<std::filesystem::path> RotatingSink::current() const {
  const std::lock_guard lock(mutex_);
  return current_;
}

}  // namespace jsonl::detail
