module;

#include <zstd.h>

#include <chrono>
#include <cstdlib>
#include <cxxabi.h>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <typeinfo>
#include <utility>

module jsonl.writer;

import :writer_state;

namespace jsonl::detail {
namespace {

std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> readable(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                                  std::free);
  return status == 0 && readable ? std::string(readable.get()) : std::string(name);
}

const WriterOptions& validated(const WriterOptions& options, SinkTraits sink) {
  const std::string& stem = options.file_stem;
  if (stem.empty() || stem == "." || stem == ".." ||
      stem.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
    throw std::invalid_argument("file stem must name a file inside the output directory: \"" + stem + "\"");
  }
  if (options.queue_size == 0) throw std::invalid_argument("queue size must be at least 1");
  if (options.batch_size == 0) throw std::invalid_argument("batch size must be at least 1");
  if (options.linger.count() < 1) throw std::invalid_argument("linger must be at least 1 ms");
  if (options.hold_for && options.hold_for->count() < 0) throw std::invalid_argument("hold_for must not be negative");
  if (options.shutdown_timeout.count() < 0) throw std::invalid_argument("shutdown timeout must not be negative");
  if (options.max_file_bytes && *options.max_file_bytes == 0) {
    throw std::invalid_argument("max file bytes must be positive");
  }
  if (options.max_file_age && options.max_file_age->count() <= 0) {
    throw std::invalid_argument("max file age must be positive");
  }
  if (options.max_files && *options.max_files == 0) throw std::invalid_argument("max files must be at least 1");
  if (options.max_routed_file_idle && options.max_routed_file_idle->count() <= 0) {
    throw std::invalid_argument("max routed file idle must be positive");
  }
  if (!options.clock) throw std::invalid_argument("a clock is required");
  if (options.durability.publish_interval.count() <= 0) {
    throw std::invalid_argument("publish interval must be positive");
  }
  if (!options.durability.calls) throw std::invalid_argument("durability needs its file calls");
  if (sink.own_destination) {
    // Its appends name no file: there is nothing to rotate, and the books need a place.
    if (options.output_dir) {
      throw std::invalid_argument("a sink that writes no files takes no output directory: \"" +
                                  options.output_dir->string() + "\"");
    }
    if (options.max_file_bytes || options.max_file_age || options.max_files || options.max_routed_file_idle) {
      throw std::invalid_argument("rotation needs an output directory and a sink that writes files");
    }
    if (options.durability.enabled && !options.durability.books_dir) {
      throw std::invalid_argument("durability with a sink that writes no files needs a books directory");
    }
  } else if (options.durability.books_dir) {
    throw std::invalid_argument("a books directory is for a sink that writes no files; the books of files are "
                                "published in the output directory");
  }
  if (options.durability.books_dir && !options.durability.enabled) {
    throw std::invalid_argument("a books directory needs durability");
  }
  if (options.durability.enabled && !sink.can_be_made_durable) {
    throw std::invalid_argument("durability needs a sink that can be made durable; the supplied sink cannot");
  }
  if (const Compression& compression = options.compression; compression.enabled()) {
    const int level = compression.level;
    if (level == 0 || level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) {
      throw std::invalid_argument("zstd level " + std::to_string(level) + " is out of range: 1 to " +
                                  std::to_string(ZSTD_maxCLevel()) + ", or -1 to " +
                                  std::to_string(ZSTD_minCLevel()) + " for faster ones");
    }
    if (compression.frame_bytes == 0) throw std::invalid_argument("a zstd frame's size bound must be positive");
    if (compression.frame_age <= std::chrono::seconds::zero()) {
      throw std::invalid_argument("a zstd frame's age bound must be positive");
    }
  }
  return options;
}

}  // namespace

std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::exception& error) {
    return demangle(typeid(error).name()) + ": " + error.what();
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return (type ? demangle(type->name()) : std::string("unknown exception")) + ": (not a std::exception)";
  }
}

std::thread WriterState::launch(std::function<void()> body) const {
  return std::thread([this, body = std::move(body)] {
    if (options.on_thread_start) {
      try {
        options.on_thread_start();
      } catch (...) {
        accounts.log(LogLevel::warning, "on_thread_start of a " + accounts.subject() + " JSONL writer thread threw " +
                                            describe_current_exception() + "; the thread goes on");
      }
    }
    body();
  });
}

WriterState::WriterState(WriterOptions options, SinkTraits sink)
    : options(std::move(validated(options, sink))),
      admission(this->options.queue_size, sink.own_destination || this->options.output_dir.has_value(),
                this->options.linger, holds_records() ? hold_target() : 0),
      accounts(this->options.subject, this->options.log_sink) {}

std::chrono::milliseconds WriterState::hold_for() const noexcept {
  return options.hold_for.value_or(options.compression.enabled() ? std::chrono::milliseconds(500)
                                                                 : std::chrono::milliseconds(0));
}

std::size_t WriterState::hold_target() const noexcept {
  return round_batches() * options.batch_size;
}

WriterStats WriterState::stats() const noexcept {
  WriterStats stats;
  accounts.fill(stats);
  stats.queue_depth = admission.depth();
  stats.waiting_for_room = admission.waiting();
  stats.submitted = stats.dropped(DropReason::ignored) + stats.dropped(DropReason::queue_full) +
                    admission.released() + stats.queue_depth;
  return stats;
}

WriterStats WriterState::books_view() const noexcept {
  WriterStats counts;
  accounts.fill(counts);
  counts.dropped_by[index_of(DropReason::ignored)] = 0;
  // Last: every record classified above was accepted, or refused for a full queue,
  // before it was classified.
  counts.submitted = counts.dropped(DropReason::queue_full) + admission.admitted();
  return counts;
}

}  // namespace jsonl::detail
