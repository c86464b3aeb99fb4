module;

#include <zstd.h>
#include <zstd_errors.h>

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

struct ZstdDecoder::Context {
  struct Free {
    void operator()(ZSTD_DCtx* context) const noexcept { ZSTD_freeDCtx(context); }
  };
  std::unique_ptr<ZSTD_DCtx, Free> stream{ZSTD_createDCtx()};
};

ZstdDecoder::ZstdDecoder() : context_(std::make_unique<Context>()), output_(ZSTD_DStreamOutSize(), '\0') {
  if (!context_->stream) throw std::bad_alloc();
}

ZstdDecoder::~ZstdDecoder() = default;

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

struct FrameCompressor::Context {
  struct Free {
    void operator()(ZSTD_CCtx* context) const noexcept { ZSTD_freeCCtx(context); }
  };
  std::unique_ptr<ZSTD_CCtx, Free> context{ZSTD_createCCtx()};
  std::string frame;  // scratch, as large as the largest bound yet
};

FrameCompressor::FrameCompressor(int level) : context_(std::make_unique<Context>()) {
  ZSTD_CCtx* context = context_->context.get();
  if (!context) throw std::bad_alloc();
  for (const auto [parameter, value] : {std::pair{ZSTD_c_compressionLevel, level}, std::pair{ZSTD_c_checksumFlag, 1},
                                        std::pair{ZSTD_c_contentSizeFlag, 1}}) {
    if (const std::size_t code = ZSTD_CCtx_setParameter(context, parameter, value); ZSTD_isError(code)) {
      throw zstd_error("zstd parameter", code);
    }
  }
}

FrameCompressor::FrameCompressor(FrameCompressor&&) noexcept = default;
FrameCompressor& FrameCompressor::operator=(FrameCompressor&&) noexcept = default;
FrameCompressor::~FrameCompressor() = default;

void FrameCompressor::reserve(std::size_t content_bytes) {
  std::string& frame = context_->frame;
  if (const std::size_t bound = ZSTD_compressBound(content_bytes); frame.size() < bound) frame.resize(bound);
}

void FrameCompressor::compress(FileAppend& append) {
  reserve(append.bytes.size());
  std::string& frame = context_->frame;
  const std::size_t size =
      ZSTD_compress2(context_->context.get(), frame.data(), frame.size(), append.bytes.data(), append.bytes.size());
  if (ZSTD_isError(size)) throw zstd_error("zstd compression", size);
  append.frame_content_size = append.bytes.size();
  append.bytes.assign(frame.data(), size);
}

}  // namespace jsonl::detail
