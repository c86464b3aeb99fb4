// Lines of a file read piece by piece, counted in constant memory: however long a line
// is, the verifier holds only the piece in hand, and checks that a record's line is JSON
// with a parser that builds nothing. A module implementation partition: nothing of it
// is exported.
module;

#include <boost/json/basic_parser_impl.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

module jsonl.writer:line_scan;

namespace jsonl::detail {

class LineScan {
 public:
  enum Mode { count_only, check_json };
  explicit LineScan(Mode mode) {
    if (mode == check_json) parser_.emplace(boost::json::parse_options{});
  }

  // Empty lines are not counted.
  void feed(std::string_view bytes) {
    for (std::size_t newline; (newline = bytes.find('\n')) != std::string_view::npos;) {
      piece(bytes.substr(0, newline));
      bytes.remove_prefix(newline + 1);
      finish(true);
    }
    piece(bytes);
  }
  // A piece left unterminated where a segment ends is a line of its own.
  void end_segment() { finish(false); }
  // Whether the bytes fed so far end inside a line.
  bool line_open() const noexcept { return in_line_; }
  // Forgets the piece of a line in hand without counting it: the caller counts it as
  // part of what cut the line short.
  void drop_open_line() {
    if (parser_) parser_->reset();
    in_line_ = false;
    failed_ = false;
  }

  std::uint64_t lines() const noexcept { return terminated_ + cut_; }
  std::uint64_t terminated() const noexcept { return terminated_; }
  std::uint64_t cut() const noexcept { return cut_; }
  // With check_json: the lines that are one JSON value each, and the others.
  std::uint64_t parsed() const noexcept { return parsed_; }
  std::uint64_t unparsed() const noexcept { return lines() - parsed_; }

 private:
  // Accepts every value and keeps none of it.
  struct Discard {
    static constexpr std::size_t max_object_size = std::size_t(-1);
    static constexpr std::size_t max_array_size = std::size_t(-1);
    static constexpr std::size_t max_key_size = std::size_t(-1);
    static constexpr std::size_t max_string_size = std::size_t(-1);
    bool on_document_begin(boost::system::error_code&) { return true; }
    bool on_document_end(boost::system::error_code&) { return true; }
    bool on_array_begin(boost::system::error_code&) { return true; }
    bool on_array_end(std::size_t, boost::system::error_code&) { return true; }
    bool on_object_begin(boost::system::error_code&) { return true; }
    bool on_object_end(std::size_t, boost::system::error_code&) { return true; }
    bool on_string_part(boost::json::string_view, std::size_t, boost::system::error_code&) { return true; }
    bool on_string(boost::json::string_view, std::size_t, boost::system::error_code&) { return true; }
    bool on_key_part(boost::json::string_view, std::size_t, boost::system::error_code&) { return true; }
    bool on_key(boost::json::string_view, std::size_t, boost::system::error_code&) { return true; }
    bool on_number_part(boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_int64(std::int64_t, boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_uint64(std::uint64_t, boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_double(double, boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_bool(bool, boost::system::error_code&) { return true; }
    bool on_null(boost::system::error_code&) { return true; }
    bool on_comment_part(boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_comment(boost::json::string_view, boost::system::error_code&) { return true; }
  };

  void piece(std::string_view bytes) {
    if (bytes.empty()) return;
    in_line_ = true;
    if (!parser_ || failed_) return;
    boost::system::error_code error;
    const std::size_t used = parser_->write_some(true, bytes.data(), bytes.size(), error);
    // The parser stops after a whole value; what follows may only be whitespace.
    failed_ = error.failed() || bytes.substr(used).find_first_not_of(" \t\r") != std::string_view::npos;
  }

  void finish(bool terminated) {
    if (!in_line_) return;
    ++(terminated ? terminated_ : cut_);
    if (parser_) {
      if (!failed_) {
        boost::system::error_code error;
        parser_->write_some(false, nullptr, 0, error);
        if (!error.failed() && parser_->done()) ++parsed_;
      }
      parser_->reset();
    }
    in_line_ = false;
    failed_ = false;
  }

  std::optional<boost::json::basic_parser<Discard>> parser_;
  bool in_line_ = false;
  bool failed_ = false;  // the line in hand is already known not to parse
  std::uint64_t terminated_ = 0, cut_ = 0, parsed_ = 0;
};

}  // namespace jsonl::detail
