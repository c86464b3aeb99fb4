// The XXH64 of a zstd frame's content, fed piece by piece: what a frame ended by hand
// carries as its checksum. xxHash is compiled into content_checksum.cpp, a unit that is
// no module unit: its implementation macros and the C headers they pull in stay out of
// every unit that imports a module.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

namespace jsonl::detail {

class ContentChecksum {
 public:
  ContentChecksum();
  ContentChecksum(ContentChecksum&&) noexcept;
  ContentChecksum& operator=(ContentChecksum&&) noexcept;
  ~ContentChecksum();

  // Starts over, as for a new frame.
  void reset() noexcept;
  void add(std::string_view content) noexcept;
  // XXH64 (seed 0) of the content added since the last reset.
  std::uint64_t digest() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace jsonl::detail
