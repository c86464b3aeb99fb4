// zstd frames: the stream the write side compresses a file's appends with, and what any
// reader of a compressed file needs (verify_books, jsonl-perf summary): where a frame
// ends, and a decoder fed a file in pieces of any size that says whether it stopped
// where a piece the writer flushed ends. zstd itself stays in the implementation
// (zstd_frames.cpp).
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
// checked as its end is decoded; content of a frame is handed out as its blocks are
// decoded, before the frame ends. The writer ends every append with a whole block (a
// flush), so a file being written, or left by a killed writer, is trusted up to where
// between_pieces() was last true.
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
    walk(compressed);
    while (decode_some(compressed)) take(std::string_view(output_.data(), produced_));
  }

  // Whether every byte fed so far belongs to frames that ended (true before any).
  bool between_frames() const noexcept { return between_frames_; }
  // Whether the bytes fed so far end where a frame or one of its blocks ends, as every
  // append of the writer does (true before any); read from the frames' headers and
  // block headers, whatever zstd has yet decoded.
  bool between_pieces() const noexcept { return since_piece_end_ == 0; }
  // Bytes fed since between_pieces() was last true.
  std::uint64_t bytes_since_piece_end() const noexcept { return since_piece_end_; }
  // Frames that ended.
  std::uint64_t frames() const noexcept { return frames_; }

 private:
  // Decodes from the front of `compressed` into output_, consuming what it read; false
  // once it has nothing more to produce from it.
  bool decode_some(std::string_view& compressed);
  // Follows the frames' structure over `compressed` (Walk in zstd_frames.cpp).
  void walk(std::string_view compressed) noexcept;

  struct Context;
  std::unique_ptr<Context> context_;
  std::string output_;
  std::size_t produced_ = 0;
  bool between_frames_ = true;
  std::uint64_t frames_ = 0;
  std::uint64_t since_piece_end_ = 0;
};

}  // namespace jsonl

export namespace jsonl::detail {

// One zstd frame written piece by piece, as a file's appends come: each piece ends in a
// flushed block, so that a reader decodes every piece written so far, and the window
// carries over from piece to piece, so that a piece of a few lines compresses nearly as
// well as the frame's content would in one. The frame's checksum (XXH64 of its content)
// is kept beside zstd's, over the pieces that landed only, so that a frame whose last
// piece did not land is still ended after those that did (end_after_landed). Reused
// frame after frame, so that in steady state compressing
// allocates nothing of ours beyond the buffer it is handed.
class FrameStream {
 public:
  explicit FrameStream(int level);
  FrameStream(FrameStream&&) noexcept;
  FrameStream& operator=(FrameStream&&) noexcept;
  ~FrameStream();

  // Appends to `piece` `lines` (empty: none) compressed as the frame's next piece; with
  // `last`, the piece ends the frame. Throws std::runtime_error when zstd fails: the
  // frame is then to be ended by hand (end_after_landed).
  void compress(std::string_view lines, bool last, std::string& piece);
  // The piece compressed last landed whole, with these lines. After a last piece the
  // stream starts a new frame.
  void landed(std::string_view lines, bool last);
  // Forgets everything of the frame: the next piece begins a new one.
  void abandon();
  // Appends to `piece` the bytes that end the frame right after the pieces that landed (an
  // empty last block and the checksum of their content), whatever the stream compressed
  // beyond them; the stream starts a new frame next, whether these bytes land or not.
  void end_after_landed(std::string& piece);

  // Lines of the frame's pieces that landed.
  std::uint64_t content_bytes() const noexcept;

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

}  // namespace jsonl::detail
