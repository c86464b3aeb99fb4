module;

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

module jsonl.writer;

import :compressing_sink;

namespace jsonl::detail {

CompressingSink::CompressingSink(const Compression& compression, Sink& inner, Clock clock)
    : compression_(compression), inner_(inner), clock_(std::move(clock)) {}

CompressingSink::Frame& CompressingSink::frame_for(const std::filesystem::path& file) {
  const auto found = std::find_if(frames_.begin(), frames_.end(), [&](const Frame& frame) { return frame.file == file; });
  if (found != frames_.end()) return *found;
  // A stream of a frame that ended is reused before a new one is made.
  const auto spare = std::find_if(frames_.begin(), frames_.end(), [](const Frame& frame) { return frame.idle(); });
  if (spare != frames_.end()) {
    spare->file = file;
    return *spare;
  }
  return frames_.emplace_back(Frame{file, FrameStream(compression_.level)});
}

void CompressingSink::append(const FileAppend& append, AppendOutcome& outcome) {
  const std::filesystem::path& file = outcome.file;
  const bool ends_only = append.records == 0 && append.bytes.empty();
  if (append.file.empty() && !ends_only) {
    if (!own_file_.empty() && own_file_ != file) left_.push_back(own_file_);
    own_file_ = file;
  }
  Frame& frame = frame_for(file);
  const auto now = clock_();
  const bool last = ends_only || frame.stream.content_bytes() + append.bytes.size() >= compression_.frame_bytes ||
                    (frame.open && now - frame.began >= compression_.frame_age);
  piece_.file = append.file;
  piece_.records = append.records;
  piece_.frame_content_size = append.bytes.size();
  piece_.bytes.assign(frame.ending);
  if (!ends_only || frame.open) {
    try {
      frame.stream.compress(append.bytes, last, piece_.bytes);
    } catch (...) {
      recover(frame, AppendOutcome{});
      throw;
    }
  }
  outcome.bytes = piece_.bytes.size();
  if (piece_.bytes.empty()) {
    frame.file.clear();
    return;
  }
  inner_.append(piece_, outcome);
  if (!outcome.succeeded()) return recover(frame, outcome);
  frame.ending.clear();
  frame.stream.landed(append.bytes, last);
  if (last) {
    frame.open = false;
    frame.file.clear();
  } else if (!frame.open) {
    frame.open = true;
    frame.began = now;
  }
}

void CompressingSink::recover(Frame& frame, const AppendOutcome& outcome) {
  // A torn file takes no more pieces (the file sink refuses them).
  if (outcome.torn) {
    frame.stream.abandon();
    frame.open = false;
    frame.ending.clear();
    frame.file.clear();
    return;
  }
  if (!frame.open) return frame.stream.abandon();
  frame.ending.clear();
  frame.stream.end_after_landed(frame.ending);
  frame.open = false;
}

std::vector<std::filesystem::path> CompressingSink::frames_to_end(bool all) {
  const std::vector<std::filesystem::path> left = std::exchange(left_, {});
  const auto now = clock_();
  std::vector<std::filesystem::path> files;
  for (const Frame& frame : frames_) {
    if (frame.idle()) continue;
    const bool rotated_away = std::find(left.begin(), left.end(), frame.file) != left.end();
    if (all || rotated_away || !frame.ending.empty() || now - frame.began >= compression_.frame_age) {
      files.push_back(frame.file);
    }
  }
  return files;
}

}  // namespace jsonl::detail
