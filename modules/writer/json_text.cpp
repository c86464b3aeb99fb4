module;

#include <boost/json.hpp>
#include <dragonbox/dragonbox.h>
#include <algorithm>
#include <initializer_list>
#include <memory>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string>
#include <string_view>
#include <system_error>

module jsonl.writer;

namespace jsonl {
namespace {

constexpr char hex_digits[] = "0123456789abcdef";

struct DecodedCodePoint {
  char32_t code_point;
  std::size_t length;  // bytes consumed; the maximal subpart when invalid
  bool valid;
};

// Decodes one UTF-8 sequence starting at text[0] (a byte >= 0x80), following the
// Unicode "maximal subpart" practice for invalid input.
DecodedCodePoint decode_utf8(std::string_view text) noexcept {
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

// Appends to a std::string through a raw cursor: the string is grown ahead, a little at
// a time (resize zero-fills what it adds, and the string may already hold many lines;
// its capacity still grows geometrically), and trimmed to what was written when the
// Output goes away, so each append is a bounds check and a copy, not a std::string call.
class Output {
 public:
  explicit Output(std::string& text) : text_(text), cursor_(text.data() + text.size()), end_(cursor_) {}
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output() { text_.resize(static_cast<std::size_t>(cursor_ - text_.data())); }

  // Room for `bytes` more at the returned cursor; commit_to() the end of what was
  // written there.
  [[gnu::always_inline]] char* reserve(std::size_t bytes) {
    if (static_cast<std::size_t>(end_ - cursor_) < bytes) grow(bytes);
    return cursor_;
  }
  void commit_to(char* end) noexcept { cursor_ = end; }
  [[gnu::always_inline]] void put(char c) { *reserve(1) = c, ++cursor_; }
  [[gnu::always_inline]] void append(const char* data, std::size_t bytes) {
    copy_short(reserve(bytes), data, bytes);
    cursor_ += bytes;
  }
  Output& operator+=(char c) {
    put(c);
    return *this;
  }
  Output& operator+=(std::string_view text) {
    append(text.data(), text.size());
    return *this;
  }

  // memcpy, with the short lengths JSON text is mostly made of copied inline rather
  // than through a library call.
  static void copy_short(char* to, const char* from, std::size_t bytes) noexcept {
    if (bytes > 16 && bytes <= 32) {
      std::memcpy(to, from, 16);
      std::memcpy(to + bytes - 16, from + bytes - 16, 16);
    } else if (bytes >= 8 && bytes <= 16) {
      std::memcpy(to, from, 8);
      std::memcpy(to + bytes - 8, from + bytes - 8, 8);
    } else if (bytes >= 4 && bytes < 8) {
      std::memcpy(to, from, 4);
      std::memcpy(to + bytes - 4, from + bytes - 4, 4);
    } else if (bytes < 4) {
      for (std::size_t i = 0; i < bytes; ++i) to[i] = from[i];
    } else {
      std::memcpy(to, from, bytes);
    }
  }

 private:
  [[gnu::noinline]] void grow(std::size_t bytes) {
    const auto size = static_cast<std::size_t>(cursor_ - text_.data());
    text_.resize(size + std::max(bytes, std::size_t{1024}));
    cursor_ = text_.data() + size;
    end_ = text_.data() + text_.size();
  }

  std::string& text_;
  char* cursor_;
  char* end_;
};

// The eight decimal digits of `value` (below 10^8, leading zeros included) as ASCII, in
// memory order: both four-digit halves, then their two-digit quarters, then single
// digits are split in parallel lanes of one word by multiply-and-shift division.
std::uint64_t eight_digits(std::uint32_t value) noexcept {
  const std::uint64_t halves = value / 10000 | std::uint64_t{value % 10000} << 32;
  const std::uint64_t hundreds = ((halves * 10486) >> 20) & 0x0000007F0000007F;  // lane / 100
  const std::uint64_t quarters = hundreds | (halves - 100 * hundreds) << 16;
  const std::uint64_t tens = ((quarters * 103) >> 10) & 0x000F000F000F000F;     // lane / 10
  return (tens | (quarters - 10 * tens) << 8) + 0x3030303030303030;
}

// The decimal digits of `value` (0 < value < 10^17) at the end of `buffer`; returns the
// first, and their count in `count`.
const char* significand_digits(std::uint64_t value, char (&buffer)[48], int& count) noexcept {
  static constexpr std::uint64_t powers_of_10[] = {
      1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
      10000000000, 100000000000, 1000000000000, 10000000000000, 100000000000000,
      1000000000000000, 10000000000000000, 100000000000000000};
  const int estimate = (std::bit_width(value) * 1233) >> 12;  // floor(log10) or one less
  count = estimate + (value >= powers_of_10[estimate]);
  const std::uint64_t high = value / 100000000;
  const std::uint64_t words[3] = {eight_digits(static_cast<std::uint32_t>(high / 100000000)),
                                  eight_digits(static_cast<std::uint32_t>(high % 100000000)),
                                  eight_digits(static_cast<std::uint32_t>(value % 100000000))};
  std::memcpy(buffer, words, sizeof words);
  return buffer + sizeof words - count;
}

// Bytes a string can hold as they are: printable ASCII but '"' and '\\'.
constexpr std::array<bool, 256> plain_bytes = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x7F; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}();

#if defined(__SSE2__)
// A bit per byte of `bytes`, set for each byte that is not plain.
unsigned not_plain_mask(__m128i bytes) noexcept {
  // As signed bytes, those below 0x20 and those from 0x80 up are all less than 0x20.
  const __m128i control_or_high = _mm_cmplt_epi8(bytes, _mm_set1_epi8(0x20));
  const __m128i del = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(0x7F));
  const __m128i quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('"'));
  const __m128i backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\'));
  return static_cast<unsigned>(
      _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(control_or_high, del), _mm_or_si128(quote, backslash))));
}

// The length of the run of plain bytes `text` starts with, 16 bytes at a time; a string
// of 8 to 15 bytes in one test of its first and last 8.
std::size_t plain_prefix(std::string_view text) noexcept {
  const char* const data = text.data();
  const std::size_t size = text.size();
  if (size >= 16) {
    std::size_t i = 0;
    for (; i + 16 <= size; i += 16) {
      const unsigned mask = not_plain_mask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i)));
      if (mask != 0) return i + static_cast<std::size_t>(std::countr_zero(mask));
    }
    if (i == size) return size;
    // The last 16 bytes, overlapping bytes already found plain.
    const unsigned mask = not_plain_mask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + size - 16)));
    return mask == 0 ? size : size - 16 + static_cast<std::size_t>(std::countr_zero(mask));
  }
  if (size >= 8) {
    const __m128i first = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(data));
    const __m128i last = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(data + size - 8));
    const unsigned mask = not_plain_mask(_mm_unpacklo_epi64(first, last));
    if ((mask & 0xFF) != 0) return static_cast<std::size_t>(std::countr_zero(mask));
    return mask == 0 ? size : size - 8 + static_cast<std::size_t>(std::countr_zero(mask >> 8));
  }
  std::size_t i = 0;
  while (i < size && plain_bytes[static_cast<unsigned char>(data[i])]) ++i;
  return i;
}
#else
// Whether the 8 bytes at `bytes` are all plain, tested a word at a time. May say no for
// some plain words (a carry between bytes), never yes for one that is not.
bool all_plain(const char* bytes) noexcept {
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
std::size_t plain_prefix(std::string_view text) noexcept {
  const std::size_t size = text.size();
  std::size_t i = 0;
  while (i + 8 <= size && all_plain(text.data() + i)) i += 8;
  // Fewer than 8 bytes left: test the last 8, overlapping words already seen.
  if (i < size && i + 8 > size && size >= 8 && all_plain(text.data() + size - 8)) return size;
  while (i < size && plain_bytes[static_cast<unsigned char>(text[i])]) ++i;
  return i;
}
#endif

class JsonTextWriter {
 public:
  JsonTextWriter(std::string& out, const JsonTextOptions& options) : out_(out), options_(options) {}

  bool sanitized() const noexcept { return sanitized_; }

  // An object at nesting level `depth` (1 for a top-level one), without the members whose
  // keys are in `omitted`.
  void object_without(const boost::json::object& members, std::size_t depth,
                      std::initializer_list<std::string_view> omitted) {
    open_object(depth);
    bool first = true;
    for (const auto& member : members) {
      if (std::find(omitted.begin(), omitted.end(), member.key()) != omitted.end()) continue;
      key(member.key(), first);
      first = false;
      value(member.value(), depth);
    }
    close_object();
  }

  void open_object(std::size_t depth) {
    check_depth(depth);
    out_ += '{';
  }
  [[gnu::always_inline]] void key(std::string_view name, bool first) {
    quoted(name, first ? quote : comma_quote, quote_colon);
  }
  void close_object() { out_ += '}'; }

  void value(const boost::json::value& v, std::size_t depth) {
    switch (v.kind()) {
      case boost::json::kind::null:
        out_ += "null";
        return;
      case boost::json::kind::bool_:
        out_ += v.get_bool() ? "true" : "false";
        return;
      case boost::json::kind::int64:
        integer(v.get_int64());
        return;
      case boost::json::kind::uint64:
        integer(v.get_uint64());
        return;
      case boost::json::kind::double_:
        floating(v.get_double());
        return;
      case boost::json::kind::string:
        string(v.get_string());
        return;
      case boost::json::kind::array:
        array(v.get_array(), depth + 1);
        return;
      case boost::json::kind::object:
        object(v.get_object(), depth + 1);
        return;
    }
  }

 protected:
  void object(const boost::json::object& members, std::size_t depth) {
    open_object(depth);
    bool first = true;
    for (const auto& member : members) {
      key(member.key(), first);
      first = false;
      value(member.value(), depth);
    }
    close_object();
  }

  void check_depth(std::size_t depth) const {
    if (depth > options_.max_depth) {
      throw MalformedRecord("nesting deeper than " + std::to_string(options_.max_depth) +
                            " levels");
    }
  }

  void array(const boost::json::array& items, std::size_t depth) {
    check_depth(depth);
    out_ += '[';
    bool first = true;
    for (const auto& item : items) {
      if (!first) out_ += ',';
      first = false;
      value(item, depth);
    }
    out_ += ']';
  }


  template <class Integer>
  void integer(Integer number) {
    char* const at = out_.reserve(24);
    out_.commit_to(std::to_chars(at, at + 24, number).ptr);
  }

  // Python's repr(float): the shortest digits that round-trip (Dragonbox's public API),
  // laid out by Python's float_repr rules. Copies are fixed-size over-copies into the
  // reserved room, which is why it is larger than the longest repr (24 bytes).
  void floating(double number) {
    if (!std::isfinite(number)) {
      throw MalformedRecord(std::string("Out of range float values are not JSON compliant: ") +
                            (std::isnan(number) ? "nan" : number > 0 ? "inf" : "-inf"));
    }
    char* at = out_.reserve(64);
    if (std::signbit(number)) *at++ = '-';
    if (number == 0) {
      std::memcpy(at, "0.0", 3);
      out_.commit_to(at + 3);
      return;
    }
    // Dragonbox's default policies: trailing zeros removed, and among the shortest digits
    // the ones nearest the value, ties to even, as Python's repr picks them.
    const auto decimal = jkj::dragonbox::to_decimal(std::fabs(number));
    char buffer[48];
    int count = 0;
    const char* const digits = significand_digits(decimal.significand, buffer, count);
    const int point = count + decimal.exponent;  // digits before the decimal point
    if (point > 16 || point < -3) {
      at = scientific(at, digits, count, point - 1);
    } else if (point <= 0) {  // 0.000ddd
      std::memcpy(at, "0.000", 5);
      at += 2 - point;
      std::memcpy(at, digits, 20);
      at += count;
    } else if (point < count) {  // ddd.ddd
      std::memcpy(at, digits, 20);
      at += point;
      *at++ = '.';
      std::memcpy(at, digits + point, 20);
      at += count - point;
    } else {  // ddd000.0
      std::memcpy(at, digits, 20);
      at += count;
      std::memcpy(at, "0000000000000000", 16);
      at += point - count;
      std::memcpy(at, ".0", 2);
      at += 2;
    }
    out_.commit_to(at);
  }

  // "d[.ddd]e±XX", at least two exponent digits.
  static char* scientific(char* at, const char* digits, int count, int exponent) {
    *at++ = digits[0];
    if (count > 1) {
      *at++ = '.';
      std::memcpy(at, digits + 1, 20);
      at += count - 1;
    }
    *at++ = 'e';
    *at++ = exponent < 0 ? '-' : '+';
    const int magnitude = exponent < 0 ? -exponent : exponent;
    if (magnitude < 10) *at++ = '0';
    return std::to_chars(at, at + 3, magnitude).ptr;
  }

  void unicode_escape(char32_t unit) {
    const char escape[6] = {'\\', 'u', hex_digits[(unit >> 12) & 0xF], hex_digits[(unit >> 8) & 0xF],
                            hex_digits[(unit >> 4) & 0xF], hex_digits[unit & 0xF]};
    out_.append(escape, sizeof escape);
  }

  void ascii_escape(unsigned char c) {
    switch (c) {
      case '"':
        out_ += "\\\"";
        return;
      case '\\':
        out_ += "\\\\";
        return;
      case '\n':
        out_ += "\\n";
        return;
      case '\r':
        out_ += "\\r";
        return;
      case '\t':
        out_ += "\\t";
        return;
      case '\b':
        out_ += "\\b";
        return;
      case '\f':
        out_ += "\\f";
        return;
      default:
        if (c == 0x7F && !options_.ensure_ascii) {
          out_ += static_cast<char>(c);
        } else {
          unicode_escape(c);
        }
    }
  }

  void non_ascii(std::string_view rest, std::size_t& consumed) {
    const DecodedCodePoint decoded = decode_utf8(rest);
    consumed = decoded.length;
    if (!decoded.valid) sanitized_ = true;
    if (!options_.ensure_ascii) {
      if (decoded.valid) {
        out_.append(rest.data(), decoded.length);
      } else {
        out_ += std::string_view("\xEF\xBF\xBD");
      }
      return;
    }
    const char32_t cp = decoded.code_point;
    if (cp > 0xFFFF) {
      const char32_t offset = cp - 0x10000;
      unicode_escape(0xD800 + (offset >> 10));
      unicode_escape(0xDC00 + (offset & 0x3FF));
    } else {
      unicode_escape(cp);
    }
  }

  static constexpr std::string_view quote = "\"", comma_quote = ",\"", quote_colon = "\":";

  void string(std::string_view text) { quoted(text, quote, quote); }

  // `text` as a JSON string between `opening` (a quote, after a comma for a key that is
  // not the first) and `closing` (a quote, then a colon for a key). Most strings (every
  // key, most values) are plain throughout: they are found so a word at a time and
  // copied in one go, punctuation included.
  [[gnu::always_inline]] void quoted(std::string_view text, std::string_view opening, std::string_view closing) {
    const std::size_t plain = plain_prefix(text);
    char* at = out_.reserve(text.size() + 4);
    std::memcpy(at, opening.data(), 2);  // over-copies a one-byte opening; the room is there
    at += opening.size();
    Output::copy_short(at, text.data(), plain);
    at += plain;
    if (plain == text.size()) {
      std::memcpy(at, closing.data(), 2);
      out_.commit_to(at + closing.size());
      return;
    }
    out_.commit_to(at);
    escaped_rest(text, plain);
    out_ += closing;
  }

  // Writes text[from..] (text[from] is not plain): each byte that needs it escaped, the
  // plain runs between them copied as they are.
  void escaped_rest(std::string_view text, std::size_t from) {
    for (std::size_t i = from; i < text.size();) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c < 0x80) {
        ascii_escape(c);
        ++i;
      } else {
        std::size_t consumed = 0;
        non_ascii(text.substr(i), consumed);
        i += consumed;
      }
      const std::size_t plain = plain_prefix(text.substr(i));
      out_.append(text.data() + i, plain);
      i += plain;
    }
  }

  Output out_;
  const JsonTextOptions& options_;
  bool sanitized_ = false;
};

}  // namespace

bool append_json(const boost::json::value& value, std::string& out,
                 const JsonTextOptions& options) {
  JsonTextWriter writer(out, options);
  writer.value(value, 0);
  return writer.sanitized();
}

// The stream's options, held before the writer that refers to them is constructed: the
// caller's may be a temporary.
struct OwnOptions {
  JsonTextOptions options;
};

class JsonTextStream::Writer : private OwnOptions, public JsonTextWriter {
 public:
  Writer(std::string& out, const JsonTextOptions& options)
      : OwnOptions{options}, JsonTextWriter(out, OwnOptions::options) {}

  using JsonTextWriter::floating;
  using JsonTextWriter::integer;
  using JsonTextWriter::string;

  void put(std::string_view text) { out_ += text; }

  // Before any value: inside an array, the comma that separates it from the one before.
  void before_value() {
    if (!in_array) return;
    if (has_members) out_ += ',';
    has_members = true;
  }

  void open(bool array) {
    if (depth >= 64) throw std::length_error("JsonTextStream: more than 64 objects and arrays open");
    check_depth(++depth);
    out_ += array ? '[' : '{';
    outer_has_members = outer_has_members << 1 | has_members;
    outer_in_array = outer_in_array << 1 | in_array;
    has_members = false;
    in_array = array;
  }

  void close() {
    out_ += in_array ? ']' : '}';
    --depth;
    has_members = (outer_has_members & 1) != 0;
    in_array = (outer_in_array & 1) != 0;
    outer_has_members >>= 1;
    outer_in_array >>= 1;
  }

  std::size_t depth = 0;       // objects and arrays open
  bool has_members = false;    // the innermost open one has a member (an element) already
  bool in_array = false;       // the innermost open one is an array
  std::uint64_t outer_has_members = 0;  // the same for the enclosing ones, innermost lowest
  std::uint64_t outer_in_array = 0;
};

JsonTextStream::JsonTextStream(std::string& out, const JsonTextOptions& options)
    : writer_(std::make_unique<Writer>(out, options)) {}

JsonTextStream::~JsonTextStream() = default;

void JsonTextStream::begin_object() {
  writer_->before_value();
  writer_->open(false);
}

void JsonTextStream::key(std::string_view name) {
  writer_->key(name, !writer_->has_members);
  writer_->has_members = true;
}

void JsonTextStream::value(const boost::json::value& value) {
  writer_->before_value();
  writer_->value(value, writer_->depth);
}

void JsonTextStream::null() {
  writer_->before_value();
  writer_->put("null");
}

void JsonTextStream::boolean(bool value) {
  writer_->before_value();
  writer_->put(value ? "true" : "false");
}

void JsonTextStream::integer(std::int64_t value) {
  writer_->before_value();
  writer_->integer(value);
}

void JsonTextStream::unsigned_integer(std::uint64_t value) {
  writer_->before_value();
  writer_->integer(value);
}

void JsonTextStream::floating(double value) {
  writer_->before_value();
  writer_->floating(value);
}

void JsonTextStream::string(std::string_view text) {
  writer_->before_value();
  writer_->string(text);
}

void JsonTextStream::object_without(const boost::json::object& members,
                                    std::initializer_list<std::string_view> omitted) {
  writer_->before_value();
  writer_->object_without(members, writer_->depth + 1, omitted);
}

void JsonTextStream::end_object() { writer_->close(); }

void JsonTextStream::begin_array() {
  writer_->before_value();
  writer_->open(true);
}

void JsonTextStream::end_array() { writer_->close(); }

bool JsonTextStream::sanitized() const noexcept { return writer_->sanitized(); }

std::string to_json_text(const boost::json::value& value, const JsonTextOptions& options) {
  std::string out;
  append_json(value, out, options);
  return out;
}

namespace {

// str.isspace() characters beyond ASCII, in UTF-8.
constexpr std::array<std::string_view, 19> unicode_spaces{
    "\xc2\x85",     "\xc2\xa0",     "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x81",
    "\xe2\x80\x82", "\xe2\x80\x83", "\xe2\x80\x84", "\xe2\x80\x85", "\xe2\x80\x86",
    "\xe2\x80\x87", "\xe2\x80\x88", "\xe2\x80\x89", "\xe2\x80\x8a", "\xe2\x80\xa8",
    "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80"};

bool is_ascii_space(char c) noexcept { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f'); }

// Bytes of the space that `text` starts (or, `at_end`, ends) with; 0 if none.
std::size_t space_at(std::string_view text, bool at_end) noexcept {
  if (text.empty()) return 0;
  if (is_ascii_space(at_end ? text.back() : text.front())) return 1;
  for (std::string_view space : unicode_spaces) {
    if (at_end ? text.ends_with(space) : text.starts_with(space)) return space.size();
  }
  return 0;
}

}  // namespace

std::string_view python_strip(std::string_view text) noexcept {
  while (const std::size_t n = space_at(text, false)) text.remove_prefix(n);
  while (const std::size_t n = space_at(text, true)) text.remove_suffix(n);
  return text;
}

}  // namespace jsonl
