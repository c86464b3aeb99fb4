// zstd files laid out by hand, as the writer lays them out, and read back by libzstd
// alone: what the readers under test are checked against. Header-only, for Boost.Test
// suites; links libzstd.
#pragma once

#include <zstd.h>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jsonl_test {

// What libzstd decodes of `bytes` fed whole as a stream: the content of every block
// they hold whole, and whether they end where a frame does.
struct ZstdDecoded {
  std::string content;
  bool ends_a_frame = false;
};

inline ZstdDecoded zstd_decoded(std::string_view bytes) {
  ZstdDecoded result;
  ZSTD_DCtx* stream = ZSTD_createDCtx();
  ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
  std::string out(ZSTD_DStreamOutSize(), '\0');
  for (;;) {
    ZSTD_outBuffer buffer{out.data(), out.size(), 0};
    const std::size_t hint = ZSTD_decompressStream(stream, &buffer, &in);
    BOOST_TEST_REQUIRE(!ZSTD_isError(hint), ZSTD_getErrorName(hint));
    result.content.append(out.data(), buffer.pos);
    result.ends_a_frame = hint == 0;
    if (in.pos == in.size && buffer.pos < buffer.size) break;
  }
  ZSTD_freeDCtx(stream);
  return result;
}

// One frame holding `appends`, each flushed so that it ends a block, as the writer's
// appends do. An append longer than a block spans several, whose boundaries fall where
// the block size says, mid-line as often as not.
struct ZstdAppends {
  std::string bytes;
  std::vector<std::size_t> append_ends;  // offsets in `bytes`
};

inline ZstdAppends zstd_appends(const std::vector<std::string>& appends) {
  ZstdAppends file;
  ZSTD_CCtx* stream = ZSTD_createCCtx();
  std::string out(ZSTD_CStreamOutSize(), '\0');
  for (const std::string& append : appends) {
    ZSTD_inBuffer in{append.data(), append.size(), 0};
    for (std::size_t left = 1; left != 0;) {
      ZSTD_outBuffer buffer{out.data(), out.size(), 0};
      left = ZSTD_compressStream2(stream, &buffer, &in, ZSTD_e_flush);
      BOOST_TEST_REQUIRE(!ZSTD_isError(left), ZSTD_getErrorName(left));
      file.bytes.append(out.data(), buffer.pos);
    }
    file.append_ends.push_back(file.bytes.size());
  }
  ZSTD_freeCCtx(stream);
  return file;
}

// Where each whole block of the frame `bytes` begins with ends (RFC 8878, 3.1.1).
inline std::vector<std::size_t> zstd_block_ends(std::string_view bytes) {
  const auto byte = [&](std::size_t at) -> std::uint32_t { return static_cast<unsigned char>(bytes.at(at)); };
  const std::uint32_t descriptor = byte(4);
  const bool single_segment = (descriptor >> 5) & 1;
  constexpr std::size_t dictionary_id_bytes[] = {0, 1, 2, 4}, content_size_bytes[] = {0, 2, 4, 8};
  const std::uint32_t size_flag = descriptor >> 6;
  std::size_t at = 5 + (single_segment ? 0 : 1) + dictionary_id_bytes[descriptor & 3] +
                   (size_flag == 0 && single_segment ? 1 : content_size_bytes[size_flag]);
  std::vector<std::size_t> ends;
  while (at + 3 <= bytes.size()) {
    const std::uint32_t header = byte(at) | byte(at + 1) << 8 | byte(at + 2) << 16;
    at += 3 + (((header >> 1) & 3) == 1 ? 1 : header >> 3);  // a run-length block holds one byte
    if (at > bytes.size()) break;
    ends.push_back(at);
  }
  return ends;
}

// Lines of small JSON records of a few lengths, `bytes` of them or a little more.
inline std::string record_lines(std::size_t bytes) {
  std::string lines;
  for (std::size_t n = 0; lines.size() < bytes; ++n) {
    lines += R"({"status": "ok", "n": )" + std::to_string(n) + R"(, "pad": ")" + std::string(n % 37, 'p') + "\"}\n";
  }
  return lines;
}

// Where a file of `appends`, the middle one spanning blocks, can be cut: at each block
// boundary inside the spanning append, inside each of its blocks, and inside the last
// append, of one block.
struct ZstdCuts {
  ZstdAppends file;
  std::vector<std::size_t> cuts;
  std::size_t mid_line_boundaries = 0;  // of the boundaries among the cuts
};

inline ZstdCuts zstd_cuts_of_every_kind() {
  ZstdCuts result{zstd_appends({record_lines(2'000), record_lines(3 * ZSTD_BLOCKSIZE_MAX), record_lines(2'000)})};
  const std::string_view bytes = result.file.bytes;
  const std::size_t spanning_begin = result.file.append_ends[0], spanning_end = result.file.append_ends[1];
  std::size_t block_begin = spanning_begin;
  for (const std::size_t end : zstd_block_ends(bytes)) {
    if (end <= spanning_begin || end > spanning_end) continue;
    result.cuts.push_back(block_begin + (end - block_begin) / 2);
    if (end < spanning_end) {
      result.cuts.push_back(end);
      result.mid_line_boundaries += !zstd_decoded(bytes.substr(0, end)).content.ends_with('\n');
    }
    block_begin = end;
  }
  result.cuts.push_back(spanning_end + (bytes.size() - spanning_end) / 2);
  return result;
}

}  // namespace jsonl_test
