module;

#include <boost/json.hpp>
#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <cmath>
#include <cstdint>
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

// Appends to a std::string through a raw pointer: the string is grown ahead (doubling)
// and trimmed to what was written when the Output goes away, so each append is a bounds
// check and a copy rather than a std::string call.
class Output {
 public:
  explicit Output(std::string& text) : text_(text), size_(text.size()) {}
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output() { text_.resize(size_); }

  char* reserve(std::size_t bytes) {
    if (size_ + bytes > text_.size()) text_.resize(std::max(text_.size() * 2, size_ + bytes + 256));
    return text_.data() + size_;
  }
  void commit(std::size_t bytes) noexcept { size_ += bytes; }
  void put(char c) {
    *reserve(1) = c;
    ++size_;
  }
  void append(const char* data, std::size_t bytes) {
    std::memcpy(reserve(bytes), data, bytes);
    size_ += bytes;
  }
  Output& operator+=(char c) {
    put(c);
    return *this;
  }
  Output& operator+=(std::string_view text) {
    append(text.data(), text.size());
    return *this;
  }

 private:
  std::string& text_;
  std::size_t size_;
};

// Bytes a string can hold as they are: printable ASCII but '"' and '\\'.
constexpr std::array<bool, 256> plain_bytes = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x7F; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}();

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

class JsonTextWriter {
 public:
  JsonTextWriter(std::string& out, const JsonTextOptions& options) : out_(out), options_(options) {}

  bool sanitized() const noexcept { return sanitized_; }

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

 private:
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

  void object(const boost::json::object& members, std::size_t depth) {
    check_depth(depth);
    out_ += '{';
    bool first = true;
    for (const auto& member : members) {
      if (!first) out_ += ',';
      first = false;
      string(member.key());
      out_ += ':';
      value(member.value(), depth);
    }
    out_ += '}';
  }

  template <class Integer>
  void integer(Integer number) {
    char* at = out_.reserve(24);
    out_.commit(static_cast<std::size_t>(std::to_chars(at, at + 24, number).ptr - at));
  }

  // Python's repr(float), from the shortest round-trip scientific form that to_chars
  // gives ("-d.ddde+XX", at least two exponent digits, as Python's own).
  void floating(double number) {
    if (!std::isfinite(number)) {
      throw MalformedRecord(std::string("Out of range float values are not JSON compliant: ") +
                            (std::isnan(number) ? "nan" : number > 0 ? "inf" : "-inf"));
    }
    // Fast path: when the shortest round-trip form to_chars picks is fixed notation with
    // a fraction, it is Python's repr (to_chars only picks fixed when that is no longer,
    // which for a fractional number means a decimal exponent from -4 to 15).
    char* at = out_.reserve(32);
    const char* end = std::to_chars(at, at + 32, number).ptr;
    const std::string_view shortest(at, static_cast<std::size_t>(end - at));
    if (shortest.find('.') != std::string_view::npos && shortest.find('e') == std::string_view::npos) {
      out_.commit(shortest.size());
      return;
    }
    char buffer[32];
    const auto result =
        std::to_chars(buffer, buffer + sizeof buffer, number, std::chars_format::scientific);
    const std::string_view text(buffer, static_cast<std::size_t>(result.ptr - buffer));
    const std::size_t e_at = text.find('e');
    int exponent = 0;
    std::from_chars(text.data() + e_at + (text[e_at + 1] == '+' ? 2 : 1),
                    text.data() + text.size(), exponent);
    if (exponent < -4 || exponent >= 16) {
      out_.append(text.data(), text.size());
      return;
    }
    std::string_view mantissa = text.substr(0, e_at);
    if (mantissa.front() == '-') {
      out_ += '-';
      mantissa.remove_prefix(1);
    }
    char digits[20];
    std::size_t digit_count = 0;
    for (char c : mantissa) {
      if (c != '.') digits[digit_count++] = c;
    }
    if (exponent < 0) {
      out_ += "0.";
      for (int zeros = -exponent - 1; zeros > 0; --zeros) out_ += '0';
      out_.append(digits, digit_count);
      return;
    }
    const auto integer_digits = static_cast<std::size_t>(exponent) + 1;
    if (digit_count <= integer_digits) {
      out_.append(digits, digit_count);
      for (std::size_t zeros = integer_digits - digit_count; zeros > 0; --zeros) out_ += '0';
      out_ += ".0";
    } else {
      out_.append(digits, integer_digits);
      out_ += '.';
      out_.append(digits + integer_digits, digit_count - integer_digits);
    }
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

  void string(std::string_view text) {
    out_ += '"';
    std::size_t run_start = 0;
    std::size_t i = 0;
    while (i < text.size()) {
      if (i + 8 <= text.size() && all_plain(text.data() + i)) {
        i += 8;
        continue;
      }
      const auto c = static_cast<unsigned char>(text[i]);
      if (plain_bytes[c]) {
        ++i;
        continue;
      }
      out_.append(text.data() + run_start, i - run_start);
      if (c < 0x80) {
        ascii_escape(c);
        ++i;
      } else {
        std::size_t consumed = 0;
        non_ascii(text.substr(i), consumed);
        i += consumed;
      }
      run_start = i;
    }
    out_.append(text.data() + run_start, text.size() - run_start);
    out_ += '"';
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

std::string to_json_text(const boost::json::value& value, const JsonTextOptions& options) {
  std::string out;
  append_json(value, out, options);
  return out;
}

}  // namespace jsonl
