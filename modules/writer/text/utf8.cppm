// Decoding UTF-8 as Python's json module meets it: an invalid sequence (its maximal
// subpart) is one U+FFFD. A module implementation partition: nothing of it is exported.
module;

#include <cstddef>
#include <string_view>

module jsonl.writer:utf8;

namespace jsonl::detail {

struct DecodedCodePoint {
  char32_t code_point;
  std::size_t length;  // bytes consumed; the maximal subpart when invalid
  bool valid;
};

// Decodes one UTF-8 sequence starting at text[0] (a byte >= 0x80), following the
// Unicode "maximal subpart" practice for invalid input.
inline DecodedCodePoint decode_utf8(std::string_view text) noexcept {
  constexpr DecodedCodePoint invalid_byte{0xFFFD, 1, false};
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  std::size_t continuation_bytes;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  char32_t code_point;
  if (lead < 0xC2) {
    return invalid_byte;
  } else if (lead < 0xE0) {
    continuation_bytes = 1;
    code_point = lead & 0x1F;
  } else if (lead < 0xF0) {
    continuation_bytes = 2;
    code_point = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead < 0xF5) {
    continuation_bytes = 3;
    code_point = lead & 0x07;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return invalid_byte;
  }
  for (std::size_t i = 1; i <= continuation_bytes; ++i) {
    if (i >= text.size()) return {0xFFFD, i, false};
    const unsigned char next = byte(i);
    if (next < low || next > high) return {0xFFFD, i, false};
    low = 0x80;
    high = 0xBF;
    code_point = (code_point << 6) | (next & 0x3F);
  }
  return {code_point, continuation_bytes + 1, true};
}

}  // namespace jsonl::detail
