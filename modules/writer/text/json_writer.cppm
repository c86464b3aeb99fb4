// The JSON text writer behind append_json and JsonTextStream. A module implementation
// partition: nothing of it is exported. A member function defined in a class in a named
// module is not implicitly inline, so the always_inline ones say `inline`: their bodies
// must reach the units that call them.
module;

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

module jsonl.writer:json_writer;

import :json_text;
import :utf8;
import :plain_scan;
import :python_float;

namespace jsonl::detail {

inline constexpr char hex_digits[] = "0123456789abcdef";

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
  [[gnu::always_inline]] inline char* reserve(std::size_t bytes) {
    if (static_cast<std::size_t>(end_ - cursor_) < bytes) grow(bytes);
    return cursor_;
  }
  void commit_to(char* end) noexcept { cursor_ = end; }
  [[gnu::always_inline]] inline void put(char c) { *reserve(1) = c, ++cursor_; }
  [[gnu::always_inline]] inline void append(const char* data, std::size_t bytes) {
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

// An ASCII byte as it is written in a string: itself, a backslash and a letter, or
// \u00XX; DEL as itself or, keeping the text ASCII, escaped.
struct EscapeForm {
  char bytes[7];
  unsigned char length;
};
using EscapeForms = std::array<EscapeForm, 0x80>;
constexpr EscapeForms escape_forms(bool escape_delete) {
  EscapeForms forms{};
  for (unsigned c = 0; c < 0x80; ++c) {
    if (c < 0x20 || (c == 0x7F && escape_delete)) {
      forms[c] = {{'\\', 'u', '0', '0', hex_digits[c >> 4], hex_digits[c & 0xF]}, 6};
    } else {
      forms[c] = {{static_cast<char>(c)}, 1};
    }
  }
  struct Letter {
    char byte, letter;
  };
  constexpr Letter letters[] = {{'"', '"'}, {'\\', '\\'}, {'\n', 'n'}, {'\r', 'r'},
                                {'\t', 't'}, {'\b', 'b'}, {'\f', 'f'}};
  for (const Letter& escape : letters) forms[static_cast<unsigned char>(escape.byte)] = {{'\\', escape.letter}, 2};
  return forms;
}
inline constexpr EscapeForms ascii_forms = escape_forms(true), utf8_forms = escape_forms(false);

class JsonTextWriter {
 public:
  JsonTextWriter(std::string& out, const JsonTextOptions& options) : out_(out), options_(options) {}

  bool sanitized() const noexcept { return sanitized_; }

  void open_object(std::size_t depth) {
    check_depth(depth);
    out_ += '{';
  }
  [[gnu::always_inline]] inline void key(std::string_view name, bool first) {
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

  void floating(double number) {
    if (!std::isfinite(number)) {
      if (options_.allow_nan) {
        out_ += std::isnan(number) ? "NaN" : number > 0 ? "Infinity" : "-Infinity";
        return;
      }
      throw MalformedRecord(std::string("Out of range float values are not JSON compliant: ") +
                            (std::isnan(number) ? "nan" : number > 0 ? "inf" : "-inf"));
    }
    char* const at = out_.reserve(64);
    out_.commit_to(python_float_repr(at, number));
  }

  void unicode_escape(char32_t unit) {
    const char escape[6] = {'\\', 'u', hex_digits[(unit >> 12) & 0xF], hex_digits[(unit >> 8) & 0xF],
                            hex_digits[(unit >> 4) & 0xF], hex_digits[unit & 0xF]};
    out_.append(escape, sizeof escape);
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
  [[gnu::always_inline]] inline void quoted(std::string_view text, std::string_view opening, std::string_view closing) {
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

  // Writes text[from..] (text[from] is not plain), 16 bytes at a time: the bytes that
  // are not plain found in one test of the block, the plain runs between them copied 16
  // bytes at a time (over-copying into room reserved for the block's worst case), each
  // ASCII byte that is not plain written from a table of its escaped form, a byte from
  // 0x80 up decoded as UTF-8. Text that quotes JSON (a streamed answer's frames) escapes
  // a byte every few: a branch per byte would mispredict, a step per escape does not.
  // The last bytes, too few to copy so without reading past the text, go a byte at a time.
  void escaped_rest(std::string_view text, std::size_t from) {
    const char* const data = text.data();
    const std::size_t size = text.size();
    std::size_t i = from;
    while (i < size) {
      char* at = out_.reserve(block * longest_escape + block);
      const std::size_t end = i + block;
      if (end + block <= size) {
        std::size_t written = i;
        for (unsigned escapes = not_plain_bits(data + i); escapes != 0; escapes &= escapes - 1) {
          const std::size_t escape = i + static_cast<std::size_t>(__builtin_ctz(escapes));
          std::memcpy(at, data + written, block);
          at += escape - written;
          written = escape;
          const auto c = static_cast<unsigned char>(data[escape]);
          if (c >= 0x80) break;
          const EscapeForm& form = forms_[c];
          std::memcpy(at, &form, sizeof form);
          at += form.length;
          written = escape + 1;
        }
        if (written < end && static_cast<unsigned char>(data[written]) >= 0x80) {
          i = written;
        } else {
          std::memcpy(at, data + written, block);
          at += end - written;
          i = end;
        }
      } else {
        for (const std::size_t last = std::min(size, end); i < last && static_cast<unsigned char>(data[i]) < 0x80; ++i) {
          const EscapeForm& form = forms_[static_cast<unsigned char>(data[i])];
          std::memcpy(at, &form, sizeof form);
          at += form.length;
        }
      }
      out_.commit_to(at);
      if (i < size && static_cast<unsigned char>(data[i]) >= 0x80) {
        std::size_t consumed = 0;
        non_ascii(text.substr(i), consumed);
        i += consumed;
      }
    }
  }

  static constexpr std::size_t block = 16, longest_escape = 6;

  Output out_;
  const JsonTextOptions& options_;
  const EscapeForms& forms_ = options_.ensure_ascii ? ascii_forms : utf8_forms;
  bool sanitized_ = false;
};

}  // namespace jsonl::detail
