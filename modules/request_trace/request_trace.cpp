module;

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unistd.h>
#include <utility>

module jsonl.request_trace;

namespace jsonl {
namespace {

// Bytes in the UTF-8 sequence that starts with `lead`, 1 for a byte that starts none
// (each such byte counts as one character, as Python would have decoded it to U+FFFD).
std::size_t sequence_length(std::string_view text, std::size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  const std::size_t length = lead < 0xC2 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : lead < 0xF5 ? 4 : 1;
  if (at + length > text.size()) return 1;
  for (std::size_t i = 1; i < length; ++i) {
    if ((static_cast<unsigned char>(text[at + i]) & 0xC0) != 0x80) return 1;
  }
  return length;
}

bool is_session_safe(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

}  // namespace

std::string hour_bucket(std::chrono::system_clock::time_point at) {
  return utc_text(at, "%Y-%m-%dT%H");
}

bool same_hour(std::chrono::system_clock::time_point a, std::chrono::system_clock::time_point b) {
  return std::chrono::floor<std::chrono::hours>(a) == std::chrono::floor<std::chrono::hours>(b);
}

void check_trace_kind(std::string_view kind) {
  if (kind.empty() || kind == "." || kind == ".." || kind.find_first_of(std::string_view("/\0", 2)) != kind.npos) {
    throw MalformedRecord("trace kind must name a file inside its bucket directory: \"" + std::string(kind) + "\"");
  }
}

void BucketDirectories::ensure(const FileCalls& calls, const std::filesystem::path& directory) const {
  const std::lock_guard lock(mutex_);
  if (made_.contains(directory)) return;
  create(calls, directory);
  if (made_.size() >= remembered) made_.clear();
  made_.insert(directory);
}

void BucketDirectories::create(const FileCalls& calls, const std::filesystem::path& directory) const {
  calls.make_directories(directory);
}

WriterOptions request_trace_options(std::optional<std::filesystem::path> output_dir, LogSink log_sink) {
  return {.output_dir = std::move(output_dir),
          .file_stem = "request_trace",
          .subject = std::string(request_trace_subject),
          .queue_size = request_trace_queue_size,
          .batch_size = request_trace_batch_size,
          .shutdown_timeout = request_trace_shutdown_timeout,
          .log_sink = std::move(log_sink),
          .durability = {.enabled = true},
          .wording = {.disabled = "request trace", .flushed = "request traces"}};
}

std::string process_suffix() { return "-" + std::to_string(::getpid()); }

std::string trace_file_suffix(std::string suffix, const Compression& compression) {
  if (!compression.enabled()) return suffix;
  std::random_device random;
  char digits[17];
  std::snprintf(digits, sizeof digits, "%08x%08x", static_cast<unsigned>(random()), static_cast<unsigned>(random()));
  return suffix + "-" + digits;
}

std::string make_trace_id() {
  thread_local std::mt19937_64 random{std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32)};
  std::uint64_t high = random();
  std::uint64_t low = random();
  high = (high & ~std::uint64_t{0xF000}) | 0x4000;                // version 4
  low = (low & ~(std::uint64_t{0xC} << 60)) | (std::uint64_t{0x8} << 60);  // RFC 4122 variant
  static constexpr char hex[] = "0123456789abcdef";
  std::string id = "tr_";
  id.reserve(35);
  for (const std::uint64_t half : {high, low}) {
    for (int shift = 60; shift >= 0; shift -= 4) id += hex[(half >> shift) & 0xF];
  }
  return id;
}

std::string sanitize_session_key(std::string_view value) {
  constexpr std::string_view no_session = "_no_session";
  constexpr std::size_t max_length = 128;
  value = python_strip(value);
  std::string key;
  for (std::size_t at = 0; at < value.size() && key.size() < max_length;) {
    const std::size_t length = sequence_length(value, at);
    key += length == 1 && is_session_safe(value[at]) ? value[at] : '_';
    at += length;
  }
  if (key.empty() || key.front() == '.') return std::string(no_session);
  return key;
}

bool is_credential_header(std::string_view name) {
  std::string lowered(name);
  for (char& c : lowered) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  for (const std::string_view exact : {"authorization", "proxy-authorization", "cookie", "set-cookie"}) {
    if (lowered == exact) return true;
  }
  for (const std::string_view part : {"api-key", "api_key", "apikey", "token", "secret", "password"}) {
    if (lowered.find(part) != std::string::npos) return true;
  }
  return false;
}

boost::json::value headers_json(std::span<const std::pair<std::string, std::string>> headers,
                                boost::json::storage_ptr storage) {
  boost::json::array pairs(storage);
  pairs.reserve(headers.size());
  for (const auto& [name, value] : headers) {
    const std::string_view shown = is_credential_header(name) ? std::string_view("[redacted]") : value;
    pairs.push_back(boost::json::array({name, shown}, storage));
  }
  return pairs;
}

}  // namespace jsonl
