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

CompressingSink::Frame& CompressingSink::frame_for(const std::filesystem::path& file,
                                                   const std::filesystem::path& routed) {
  const auto found = std::find_if(frames_.begin(), frames_.end(), [&](const Frame& frame) { return frame.file == file; });
  if (found != frames_.end()) return *found;
  // A file's frame keeps its name once it ends, for the file's next frame; another
  // file's idle frame is reused before a new one is made. Names are assigned only
  // here, so that appends to a file's frames copy none.
  auto spare = std::find_if(frames_.begin(), frames_.end(), [](const Frame& frame) { return frame.idle(); });
  if (spare == frames_.end()) spare = frames_.insert(frames_.end(), Frame{{}, FrameStream(compression_.level)});
  spare->file = file;
  if (spare->piece.file != routed) spare->piece.file = routed;
  return *spare;
}

void CompressingSink::append(const FileAppend& append, AppendOutcome& outcome) {
  const std::filesystem::path& file = outcome.file;
  const bool ends_only = append.records == 0 && append.bytes.empty();
  if (append.file.empty() && !ends_only && own_file_ != file) {
    if (!own_file_.empty()) left_.push_back(own_file_);
    own_file_ = file;
  }
  Frame& frame = frame_for(file, append.file);
  FileAppend& piece = frame.piece;
  const auto now = clock_();
  const bool last = ends_only || frame.stream.content_bytes() + append.bytes.size() >= compression_.frame_bytes;
  piece.records = append.records;
  piece.frame_content_size = append.bytes.size();
  piece.bytes.assign(frame.ending);
  if (!ends_only || frame.open) {
    try {
      frame.stream.compress(append.bytes, last, piece.bytes);
    } catch (...) {
      recover(frame, AppendOutcome{});
      throw;
    }
  }
  outcome.bytes = piece.bytes.size();
  if (piece.bytes.empty()) return;
  inner_.append(piece, outcome);
  if (!outcome.succeeded()) return recover(frame, outcome);
  frame.ending.clear();
  frame.stream.landed(append.bytes, last);
  if (last) {
    frame.open = false;
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

void CompressingSink::let_go(const std::filesystem::path& file) {
  const auto found = std::find_if(frames_.begin(), frames_.end(), [&](const Frame& frame) { return frame.file == file; });
  if (found == frames_.end()) return;
  found->stream.abandon();
  found->open = false;
  found->ending.clear();
}

}  // namespace jsonl::detail
