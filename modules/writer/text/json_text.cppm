// JSON text with Python's bytes: what
//   json.dumps(value, separators=(",", ":"), allow_nan=..., ensure_ascii=...)
// produces for the same value.
//
//   - no whitespace; object members in insertion order;
//   - strings: \" \\ \n \r \t \b \f in short form, other code points below 0x20 as
//     \u00xx; with ensure_ascii every code point from 0x7F up as \uxxxx (lowercase hex,
//     a UTF-16 surrogate pair above 0xFFFF), without it those are written as UTF-8;
//     an invalid UTF-8 sequence (its maximal subpart) becomes U+FFFD;
//   - integers in decimal across the int64 and uint64 ranges (a stream writes one of any
//     size from its digits);
//   - doubles as Python's repr(float): the shortest digits that round-trip, fixed
//     notation for decimal exponents -4..15 (with ".0" when there is no fraction),
//     otherwise d.ddde+XX with at least two exponent digits; NaN and the infinities as
//     NaN, Infinity and -Infinity when allowed.
module;

#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

export module jsonl.writer:json_text;

export namespace jsonl {

// A record that cannot be represented as a line: a NaN or infinite number (unless
// allowed), nesting
// deeper than the limit, or (in a configuration) a record missing what its schema needs.
// The writer drops such a record alone and counts it as malformed.
class MalformedRecord : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct JsonTextOptions {
  bool ensure_ascii = true;
  // NaN and the infinities written as json.dumps(allow_nan=True) writes them; otherwise
  // they make the value malformed.
  bool allow_nan = false;
  // Arrays and objects nested deeper than this make the value malformed, so that no
  // value can exhaust the stack.
  std::size_t max_depth = 512;
};

// Appends `value` as JSON text to `out` and returns whether invalid UTF-8 had to be
// replaced. Throws MalformedRecord for NaN or infinity (unless allowed) or excessive
// nesting; `out` may then hold part of the text and is the caller's to truncate.
bool append_json(const boost::json::value& value, std::string& out,
                 const JsonTextOptions& options = {});

// Writes a JSON object piece by piece, with the bytes append_json would write for the
// object built from the same pieces: for a configuration that lays a record out straight
// from its input, or from a struct, instead of building the output value first. The
// caller keeps the structure well formed: begin_object, then per member a key followed by
// exactly one value (a scalar, value, or nested object or array), then end_object;
// inside begin_array/end_array, values only (the commas are the stream's); at most 64
// objects and arrays open.
// Throws as append_json when a value cannot be written; `out` then holds part of the
// text and is the caller's to truncate. `out` must not be used otherwise while the
// stream exists: the stream writes ahead of the string's size and settles it when it goes.
class JsonTextStream {
 public:
  explicit JsonTextStream(std::string& out, const JsonTextOptions& options = {});
  JsonTextStream(const JsonTextStream&) = delete;
  JsonTextStream& operator=(const JsonTextStream&) = delete;
  ~JsonTextStream();

  void begin_object();
  void key(std::string_view name);
  void value(const boost::json::value& value);
  void null();
  void boolean(bool value);
  void integer(std::int64_t value);
  void unsigned_integer(std::uint64_t value);
  void floating(double value);  // NaN and infinity, unless allowed, throw MalformedRecord
  // An integer of any size, from its decimal digits (an optional '-', no leading zero),
  // written as Python writes an int ("-0" as 0). Anything else throws MalformedRecord.
  void integer_text(std::string_view digits);
  void string(std::string_view text);
  void end_object();
  void begin_array();
  void end_array();

  // Whether invalid UTF-8 had to be replaced so far.
  bool sanitized() const noexcept;

 private:
  class Writer;
  Writer& writer() noexcept;
  const Writer& writer() const noexcept;

  // The writer lives in the stream, not on the heap: a format makes a stream per record.
  static constexpr std::size_t writer_size = 128;
  alignas(std::max_align_t) unsigned char writer_storage_[writer_size];
};

// The JSON text of `value` (throws as append_json).
std::string to_json_text(const boost::json::value& value, const JsonTextOptions& options = {});

// `text` (UTF-8) without what Python's str.strip() removes around it: the characters
// for which str.isspace() is true.
std::string_view python_strip(std::string_view text) noexcept;

}  // namespace jsonl
