module;

#include <zstd.h>
#include <zstd_errors.h>

#include "content_checksum.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

module jsonl.writer;

import :zstd_frames;

namespace jsonl {
namespace {

std::runtime_error zstd_error(std::string_view what, std::size_t code) {
  return std::runtime_error(std::string(what) + ": " + ZSTD_getErrorName(code));
}

}  // namespace

bool is_compressed_file(const std::filesystem::path& file) { return file.extension() == ".zst"; }

std::optional<std::size_t> zstd_frame_size(std::string_view bytes) {
  const std::size_t size = ZSTD_findFrameCompressedSize(bytes.data(), bytes.size());
  if (!ZSTD_isError(size)) return size;
  if (ZSTD_getErrorCode(size) == ZSTD_error_srcSize_wrong) return std::nullopt;
  throw zstd_error("not a whole zstd frame", size);
}

// The structure of a sequence of frames (RFC 8878, 3.1), followed byte by byte without
// decoding: where each frame's header, blocks and checksum end. Bytes that are no frame
// leave it lost; the decoder says what is wrong with them.
class Walk {
 public:
  // Takes `bytes`; returns how many of them there are up to the end of the last block
  // or frame they end, or npos when they end none.
  std::size_t take(std::string_view bytes) noexcept {
    std::size_t last_end = std::string_view::npos;
    for (std::size_t i = 0; i < bytes.size() && stage_ != Stage::lost;) {
      if (gathering()) {
        value_ |= std::uint64_t{static_cast<unsigned char>(bytes[i++])} << (8 * gathered_++);
        if (gathered_ == need_ && finish()) last_end = i;
        continue;
      }
      const auto skipped = static_cast<std::size_t>(std::min<std::uint64_t>(need_, bytes.size() - i));
      i += skipped;
      need_ -= skipped;
      if (need_ == 0 && finish()) last_end = i;
    }
    return last_end;
  }

 private:
  enum class Stage { magic, descriptor, header_rest, block_header, block_body, checksum, skippable_size, skippable_body, lost };
  static constexpr std::uint32_t frame_magic = 0xFD2FB528, skippable_magic = 0x184D2A50;

  bool gathering() const noexcept {
    return stage_ == Stage::magic || stage_ == Stage::descriptor || stage_ == Stage::block_header ||
           stage_ == Stage::skippable_size;
  }
  void next(Stage stage, std::uint64_t need) noexcept {
    stage_ = stage;
    need_ = need;
    value_ = 0;
    gathered_ = 0;
  }
  // The stage's bytes are all in: moves on, and says whether a block or frame ended.
  bool finish() noexcept {
    const std::uint64_t value = value_;
    switch (stage_) {
      case Stage::magic:
        if (value == frame_magic) {
          next(Stage::descriptor, 1);
        } else if ((value & 0xFFFFFFF0) == skippable_magic) {
          next(Stage::skippable_size, 4);
        } else {
          next(Stage::lost, 0);
        }
        return false;
      case Stage::descriptor: {
        const bool single_segment = (value >> 5) & 1;
        checksum_ = (value >> 2) & 1;
        if ((value >> 3) & 1) {  // reserved
          next(Stage::lost, 0);
          return false;
        }
        constexpr std::uint64_t dictionary_id_bytes[] = {0, 1, 2, 4};
        constexpr std::uint64_t content_size_bytes[] = {0, 2, 4, 8};
        const std::uint64_t size_flag = value >> 6;
        const std::uint64_t rest = (single_segment ? 0 : 1) + dictionary_id_bytes[value & 3] +
                                   (size_flag == 0 && single_segment ? 1 : content_size_bytes[size_flag]);
        next(rest == 0 ? Stage::block_header : Stage::header_rest, rest == 0 ? 3 : rest);
        return false;
      }
      case Stage::header_rest:
        next(Stage::block_header, 3);
        return false;
      case Stage::block_header: {
        last_block_ = value & 1;
        const std::uint64_t type = (value >> 1) & 3;
        if (type == 3) {  // reserved
          next(Stage::lost, 0);
          return false;
        }
        next(Stage::block_body, type == 1 ? 1 : value >> 3);  // an RLE block holds one byte
        return need_ == 0 && finish();
      }
      case Stage::block_body:
        if (!last_block_) {
          next(Stage::block_header, 3);
          return true;
        }
        if (checksum_) {
          next(Stage::checksum, 4);
          return false;
        }
        next(Stage::magic, 4);
        return true;
      case Stage::checksum:
        next(Stage::magic, 4);
        return true;
      case Stage::skippable_size:
        next(Stage::skippable_body, value);
        return need_ == 0 && finish();
      case Stage::skippable_body:
        next(Stage::magic, 4);
        return true;
      case Stage::lost:
        return false;
    }
    return false;
  }

  Stage stage_ = Stage::magic;
  std::uint64_t need_ = 4;
  std::uint64_t value_ = 0;
  unsigned gathered_ = 0;
  bool checksum_ = false;
  bool last_block_ = false;
};

struct ZstdDecoder::Context {
  struct Free {
    void operator()(ZSTD_DCtx* context) const noexcept { ZSTD_freeDCtx(context); }
  };
  std::unique_ptr<ZSTD_DCtx, Free> stream{ZSTD_createDCtx()};
  Walk walk;
};

ZstdDecoder::ZstdDecoder() : context_(std::make_unique<Context>()), output_(ZSTD_DStreamOutSize(), '\0') {
  if (!context_->stream) throw std::bad_alloc();
}

ZstdDecoder::~ZstdDecoder() = default;

void ZstdDecoder::walk(std::string_view compressed) noexcept {
  const std::size_t piece_end = context_->walk.take(compressed);
  since_piece_end_ = piece_end == std::string_view::npos ? since_piece_end_ + compressed.size()
                                                         : compressed.size() - piece_end;
}

bool ZstdDecoder::decode_some(std::string_view& compressed) {
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  ZSTD_outBuffer out{output_.data(), output_.size(), 0};
  // Each call stops at a frame's end (returning 0 once it is flushed); one that leaves
  // room in the output has flushed all that the input so far allows.
  while (out.pos < out.size) {
    const std::size_t read_before = in.pos;
    const std::size_t wrote_before = out.pos;
    const std::size_t hint = ZSTD_decompressStream(context_->stream.get(), &out, &in);
    if (ZSTD_isError(hint)) {
      ZSTD_DCtx_reset(context_->stream.get(), ZSTD_reset_session_only);
      between_frames_ = true;
      compressed.remove_prefix(in.pos);
      throw zstd_error("corrupt zstd data", hint);
    }
    if (hint == 0) {
      if (in.pos != read_before || !between_frames_) ++frames_;
      between_frames_ = true;
    } else if (in.pos != read_before) {
      between_frames_ = false;
    }
    const bool stalled = in.pos == read_before && out.pos == wrote_before;
    if (stalled || (in.pos == in.size && out.pos < out.size)) break;
  }
  compressed.remove_prefix(in.pos);
  produced_ = out.pos;
  return produced_ != 0;
}

}  // namespace jsonl

namespace jsonl::detail {

struct FrameStream::Context {
  struct Free {
    void operator()(ZSTD_CCtx* context) const noexcept { ZSTD_freeCCtx(context); }
  };
  std::unique_ptr<ZSTD_CCtx, Free> stream{ZSTD_createCCtx()};
  ContentChecksum checksum;
  std::uint64_t content_bytes = 0;
};

FrameStream::FrameStream(int level) : context_(std::make_unique<Context>()) {
  ZSTD_CCtx* stream = context_->stream.get();
  if (!stream) throw std::bad_alloc();
  for (const auto [parameter, value] : {std::pair{ZSTD_c_compressionLevel, level}, std::pair{ZSTD_c_checksumFlag, 1}}) {
    if (const std::size_t code = ZSTD_CCtx_setParameter(stream, parameter, value); ZSTD_isError(code)) {
      throw zstd_error("zstd parameter", code);
    }
  }
}

FrameStream::FrameStream(FrameStream&&) noexcept = default;
FrameStream& FrameStream::operator=(FrameStream&&) noexcept = default;
FrameStream::~FrameStream() = default;

void FrameStream::compress(std::string_view lines, bool last, std::string& piece) {
  // Room for the lines at their worst (ZSTD_compressBound), a frame's header and end,
  // rounded up to a power of two so that appends a little longer than any before find
  // it already made; grown by half and continued should zstd still want more.
  const std::size_t start = piece.size();
  const std::size_t room = start + ZSTD_compressBound(lines.size()) + ZSTD_CStreamOutSize() / 8;
  if (piece.capacity() < room) piece.reserve(std::bit_ceil(room));
  piece.resize(room);
  ZSTD_inBuffer in{lines.data(), lines.size(), 0};
  ZSTD_outBuffer out{piece.data(), piece.size(), start};
  for (;;) {
    const std::size_t left =
        ZSTD_compressStream2(context_->stream.get(), &out, &in, last ? ZSTD_e_end : ZSTD_e_flush);
    if (ZSTD_isError(left)) {
      piece.resize(start);
      throw zstd_error("zstd compression", left);
    }
    if (left == 0) break;
    piece.resize(piece.size() + piece.size() / 2);
    out.dst = piece.data();
    out.size = piece.size();
  }
  piece.resize(out.pos);
}

void FrameStream::landed(std::string_view lines, bool last) {
  if (last) {
    context_->checksum.reset();
    context_->content_bytes = 0;
    return;
  }
  context_->checksum.add(lines);
  context_->content_bytes += lines.size();
}

void FrameStream::abandon() {
  ZSTD_CCtx_reset(context_->stream.get(), ZSTD_reset_session_only);
  context_->checksum.reset();
  context_->content_bytes = 0;
}

void FrameStream::end_after_landed(std::string& piece) {
  // An empty raw block marked last (its 3-byte header: last-block bit set, type raw, size
  // 0), then the low 32 bits of the content's XXH64, little-endian (RFC 8878, 3.1.1).
  const auto checksum = static_cast<std::uint32_t>(context_->checksum.digest());
  piece.append({'\x01', '\x00', '\x00'});
  for (int shift = 0; shift < 32; shift += 8) piece.push_back(static_cast<char>((checksum >> shift) & 0xff));
  abandon();
}

std::uint64_t FrameStream::content_bytes() const noexcept { return context_->content_bytes; }

}  // namespace jsonl::detail
