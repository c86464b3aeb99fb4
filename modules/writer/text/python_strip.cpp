module;

#include <array>
#include <string_view>

module jsonl.writer;

namespace jsonl {

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

