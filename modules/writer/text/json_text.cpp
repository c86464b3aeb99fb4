module;

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>

module jsonl.writer;

import :json_writer;

namespace jsonl {

using detail::JsonTextWriter;

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

JsonTextStream::JsonTextStream(std::string& out, const JsonTextOptions& options) {
  static_assert(sizeof(Writer) <= writer_size && alignof(Writer) <= alignof(std::max_align_t));
  std::construct_at(reinterpret_cast<Writer*>(writer_storage_), out, options);
}

JsonTextStream::~JsonTextStream() { std::destroy_at(&writer()); }

JsonTextStream::Writer& JsonTextStream::writer() noexcept {
  return *std::launder(reinterpret_cast<Writer*>(writer_storage_));
}

const JsonTextStream::Writer& JsonTextStream::writer() const noexcept {
  return *std::launder(reinterpret_cast<const Writer*>(writer_storage_));
}

void JsonTextStream::begin_object() {
  writer().before_value();
  writer().open(false);
}

void JsonTextStream::key(std::string_view name) {
  writer().key(name, !writer().has_members);
  writer().has_members = true;
}

void JsonTextStream::value(const boost::json::value& value) {
  writer().before_value();
  writer().value(value, writer().depth);
}

void JsonTextStream::null() {
  writer().before_value();
  writer().put("null");
}

void JsonTextStream::boolean(bool value) {
  writer().before_value();
  writer().put(value ? "true" : "false");
}

void JsonTextStream::integer(std::int64_t value) {
  writer().before_value();
  writer().integer(value);
}

void JsonTextStream::unsigned_integer(std::uint64_t value) {
  writer().before_value();
  writer().integer(value);
}

void JsonTextStream::floating(double value) {
  writer().before_value();
  writer().floating(value);
}

void JsonTextStream::integer_text(std::string_view digits) {
  const std::string_view magnitude = digits.starts_with('-') ? digits.substr(1) : digits;
  const bool decimal = !magnitude.empty() && (magnitude.size() == 1 || magnitude.front() != '0') &&
                       std::ranges::all_of(magnitude, [](char c) { return c >= '0' && c <= '9'; });
  if (!decimal) throw MalformedRecord("not an integer's digits: \"" + std::string(digits.substr(0, 40)) + '"');
  writer().before_value();
  writer().put(magnitude == "0" ? magnitude : digits);
}

void JsonTextStream::string(std::string_view text) {
  writer().before_value();
  writer().string(text);
}

void JsonTextStream::end_object() { writer().close(); }

void JsonTextStream::begin_array() {
  writer().before_value();
  writer().open(true);
}

void JsonTextStream::end_array() { writer().close(); }

bool JsonTextStream::sanitized() const noexcept { return writer().sanitized(); }

std::string to_json_text(const boost::json::value& value, const JsonTextOptions& options) {
  std::string out;
  append_json(value, out, options);
  return out;
}

}  // namespace jsonl
