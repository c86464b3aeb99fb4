// xxHash inlined here, in a unit that imports no module (see content_checksum.hpp).
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "content_checksum.hpp"

namespace jsonl::detail {

struct ContentChecksum::State {
  XXH64_state_t xxh64{};
};

ContentChecksum::ContentChecksum() : state_(std::make_unique<State>()) { reset(); }
ContentChecksum::ContentChecksum(ContentChecksum&&) noexcept = default;
ContentChecksum& ContentChecksum::operator=(ContentChecksum&&) noexcept = default;
ContentChecksum::~ContentChecksum() = default;

void ContentChecksum::reset() noexcept { XXH64_reset(&state_->xxh64, 0); }

void ContentChecksum::add(std::string_view content) noexcept {
  XXH64_update(&state_->xxh64, content.data(), content.size());
}

std::uint64_t ContentChecksum::digest() const noexcept { return XXH64_digest(&state_->xxh64); }

}  // namespace jsonl::detail
