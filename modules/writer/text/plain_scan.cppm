// Finding the run of bytes a JSON string holds as they are, a vector or a word at a time.
// A module implementation partition: nothing of it is exported.
module;

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

module jsonl.writer:plain_scan;

namespace jsonl::detail {

// Bytes a string can hold as they are: printable ASCII but '"' and '\\'.
constexpr std::array<bool, 256> plain_bytes = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x7F; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}();

#if defined(__SSE2__)
// SSE2 through the compilers' vector extensions and builtins rather than <emmintrin.h>:
// its intrinsics are `static` functions, entities local to a translation unit, which an
// inline function of a module unit must not use (clang 22 warns, and a later standard
// mode may refuse).
using Bytes16 = signed char __attribute__((vector_size(16)));
using Chars16 = char __attribute__((vector_size(16)));

inline Bytes16 every_byte(signed char value) noexcept { return Bytes16{} + value; }

// A bit per byte of `bytes`, set for each byte that is not plain.
inline unsigned not_plain_mask(Bytes16 bytes) noexcept {
  // As signed bytes, those below 0x20 and those from 0x80 up are all less than 0x20.
  const Bytes16 not_plain = (bytes < every_byte(0x20)) | (bytes == every_byte(0x7F)) | (bytes == every_byte('"')) |
                            (bytes == every_byte('\\'));
  return static_cast<unsigned>(__builtin_ia32_pmovmskb128(std::bit_cast<Chars16>(not_plain)));
}

inline Bytes16 load16(const char* bytes) noexcept {
  Bytes16 loaded;
  std::memcpy(&loaded, bytes, sizeof loaded);
  return loaded;
}

// The length of the run of plain bytes `text` starts with, 16 bytes at a time; a string
// of 8 to 15 bytes in one test of its first and last 8.
inline std::size_t plain_prefix(std::string_view text) noexcept {
  const char* const data = text.data();
  const std::size_t size = text.size();
  if (size >= 16) {
    std::size_t i = 0;
    for (; i + 16 <= size; i += 16) {
      const unsigned mask = not_plain_mask(load16(data + i));
      if (mask != 0) return i + static_cast<std::size_t>(std::countr_zero(mask));
    }
    if (i == size) return size;
    // The last 16 bytes, overlapping bytes already found plain.
    const unsigned mask = not_plain_mask(load16(data + size - 16));
    return mask == 0 ? size : size - 16 + static_cast<std::size_t>(std::countr_zero(mask));
  }
  if (size >= 8) {
    char first_and_last[16];
    std::memcpy(first_and_last, data, 8);
    std::memcpy(first_and_last + 8, data + size - 8, 8);
    const unsigned mask = not_plain_mask(load16(first_and_last));
    if ((mask & 0xFF) != 0) return static_cast<std::size_t>(std::countr_zero(mask));
    return mask == 0 ? size : size - 8 + static_cast<std::size_t>(std::countr_zero(mask >> 8));
  }
  std::size_t i = 0;
  while (i < size && plain_bytes[static_cast<unsigned char>(data[i])]) ++i;
  return i;
}

// A bit per byte of the 16 at `bytes`, set for each byte that is not plain.
inline unsigned not_plain_bits(const char* bytes) noexcept { return not_plain_mask(load16(bytes)); }
#else
// Whether the 8 bytes at `bytes` are all plain, tested a word at a time. May say no for
// some plain words (a carry between bytes), never yes for one that is not.
inline bool all_plain(const char* bytes) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101;
  constexpr std::uint64_t highs = 0x8080808080808080;
  std::uint64_t word;
  std::memcpy(&word, bytes, sizeof word);
  const auto has_zero = [](std::uint64_t x) { return (x - ones) & ~x & highs; };
  const std::uint64_t control = (word - ones * 0x20) & ~word & highs;  // a byte below 0x20
  const std::uint64_t high = (word | (word + ones)) & highs;            // 0x7F or above
  return (control | high | has_zero(word ^ (ones * '"')) | has_zero(word ^ (ones * '\\'))) == 0;
}

// The length of the run of plain bytes `text` starts with, a word at a time.
inline std::size_t plain_prefix(std::string_view text) noexcept {
  const std::size_t size = text.size();
  std::size_t i = 0;
  while (i + 8 <= size && all_plain(text.data() + i)) i += 8;
  // Fewer than 8 bytes left: test the last 8, overlapping words already seen.
  if (i < size && i + 8 > size && size >= 8 && all_plain(text.data() + size - 8)) return size;
  while (i < size && plain_bytes[static_cast<unsigned char>(text[i])]) ++i;
  return i;
}

// A bit per byte of the 16 at `bytes`, set for each byte that is not plain.
inline unsigned not_plain_bits(const char* bytes) noexcept {
  unsigned bits = 0;
  for (unsigned i = 0; i < 16; ++i) bits |= unsigned{!plain_bytes[static_cast<unsigned char>(bytes[i])]} << i;
  return bits;
}
#endif

}  // namespace jsonl::detail
