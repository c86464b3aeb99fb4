// zstd frames: the compressor the drain makes each append's frame with, and the pieces
// any reader of a compressed file needs (verify_books, jsonl-perf summary): where a
// frame ends, and a decoder fed a file piece by piece that says whether it stopped
// between frames. zstd itself stays in the implementation (zstd_frames.cpp).
module;

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

export module jsonl.writer:zstd_frames;

import :sink;

export namespace jsonl {

// Whether `file` is one the writer compressed: its name ends in ".zst".
bool is_compressed_file(const std::filesystem::path& file);

// The size of the zstd frame `bytes` begins with, when all of it is in `bytes`; empty
// when `bytes` ends before the frame does (a torn frame at a file's end, or a window
// too short). Throws std::runtime_error when `bytes` does not begin a zstd frame.
std::optional<std::size_t> zstd_frame_size(std::string_view bytes);

// Decodes a sequence of zstd frames fed in pieces of any size. Each frame's checksum is
// checked as its end is decoded; content of a frame is handed out before its end is
// reached, so a reader that must not trust a torn frame's content counts lines only
// once between_frames() says the frame it belongs to ended.
class ZstdDecoder {
 public:
  ZstdDecoder();
  ZstdDecoder(const ZstdDecoder&) = delete;
  ZstdDecoder& operator=(const ZstdDecoder&) = delete;
  ~ZstdDecoder();

  // Decodes `compressed`, handing the content to take(std::string_view) in pieces.
  // Throws std::runtime_error naming what is wrong: not a zstd frame, a checksum that
  // does not match.
  template <class Take>
  void decode(std::string_view compressed, Take&& take) {
    while (decode_some(compressed)) take(std::string_view(output_.data(), produced_));
  }

  // Whether every byte fed so far belongs to frames that ended (true before any).
  bool between_frames() const noexcept { return between_frames_; }
  // Frames that ended.
  std::uint64_t frames() const noexcept { return frames_; }

 private:
  // Decodes from the front of `compressed` into output_, consuming what it read; false
  // once it has nothing more to produce from it.
  bool decode_some(std::string_view& compressed);

  struct Context;
  std::unique_ptr<Context> context_;
  std::string output_;
  std::size_t produced_ = 0;
  bool between_frames_ = true;
  std::uint64_t frames_ = 0;
};

}  // namespace jsonl

export namespace jsonl::detail {

// Turns an append's lines into one zstd frame in place, its content size and checksum
// in the frame. One per batch a drain serializes side by side, reused batch after batch:
// its scratch space is sized ahead (reserve), and a frame is copied into the append's
// own text, so that in steady state compressing allocates nothing of ours. zstd's
// context resizes its own workspace (with malloc) when a frame's size is of another
// order than the one before.
class FrameCompressor {
 public:
  explicit FrameCompressor(int level);
  FrameCompressor(FrameCompressor&&) noexcept;
  FrameCompressor& operator=(FrameCompressor&&) noexcept;
  ~FrameCompressor();

  // Makes room for the frame of up to `content_bytes` bytes of lines.
  void reserve(std::size_t content_bytes);
  // Replaces `append.bytes` (whole lines) by their frame and sets frame_content_size.
  // Throws std::runtime_error when zstd fails.
  void compress(FileAppend& append);

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

}  // namespace jsonl::detail
