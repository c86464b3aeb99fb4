// The lines of a byte stream fed in pieces, in memory bounded by a line-length limit
// whatever the stream holds. jsonl-perf's readers (summary, replay, join) read through it:
// files gathered from a fleet are not trusted to be made of short lines, and one line of
// a gigabyte must cost a reader no more than a short one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace jsonl_perf {

// What a reader holds a line to by default: DuckDB's default `maximum_object_size`.
inline constexpr std::uint64_t default_max_line_bytes = std::uint64_t{16} << 20;

struct Line {
  std::string_view text;      // without its newline; empty when overlong
  std::uint64_t number = 0;   // from 1, every line of the stream counted
  std::uint64_t bytes = 0;    // its length without the newline, however long
  bool terminated = true;     // false: the stream's last line, which has no newline
  bool overlong = false;      // longer than the limit: its bytes were not kept
};

// Splits the bytes fed to it into lines. A line longer than `max_line_bytes` is handed
// out once it ends as overlong, its bytes dropped as they streamed past: memory is at
// most `max_line_bytes + padding` of carry, whatever the input.
//
// A line's text lies either in the bytes just fed or in the splitter's own buffer, which
// has `padding` bytes of room after the text (simdjson reads that far past a document);
// either way it is valid only during the call that hands it out.
class BoundedLines {
 public:
  explicit BoundedLines(std::uint64_t max_line_bytes, std::size_t padding = 0)
      : max_line_bytes_(max_line_bytes), padding_(padding) {}

  // Calls take(const Line&) for each line that ends in `bytes`.
  template <class Take>
  void feed(std::string_view bytes, Take&& take) {
    for (std::size_t newline; (newline = bytes.find('\n')) != std::string_view::npos;) {
      end_line(bytes.substr(0, newline), true, take);
      bytes.remove_prefix(newline + 1);
    }
    hold(bytes);
  }

  // Ends the stream: a last line without its newline is handed out, not terminated.
  template <class Take>
  void finish(Take&& take) {
    if (open_bytes_ != 0) end_line({}, false, take);
  }

  std::uint64_t lines() const noexcept { return lines_; }

 private:
  template <class Take>
  void end_line(std::string_view tail, bool terminated, Take& take) {
    Line line{.number = ++lines_, .terminated = terminated};
    if (open_bytes_ == 0 && tail.size() <= max_line_bytes_) {
      line.text = tail;
      line.bytes = tail.size();
    } else {
      hold(tail);
      line.bytes = open_bytes_;
      line.overlong = open_bytes_ > max_line_bytes_;
      if (!line.overlong) {
        carry_.reserve(carry_.size() + padding_);
        line.text = carry_;
      }
    }
    take(std::as_const(line));
    carry_.clear();
    open_bytes_ = 0;
  }

  // Adds a piece of the open line; once the line passes the limit nothing more is kept.
  void hold(std::string_view piece) {
    open_bytes_ += piece.size();
    if (open_bytes_ > max_line_bytes_) {
      if (!carry_.empty()) std::string().swap(carry_);
      return;
    }
    carry_.append(piece);
  }

  std::uint64_t max_line_bytes_;
  std::size_t padding_;
  std::string carry_;           // the open line's bytes while it is within the limit
  std::uint64_t open_bytes_ = 0;  // the open line's length so far
  std::uint64_t lines_ = 0;
};

}  // namespace jsonl_perf
