// The allocation functions of the allocation tests' binary, replaced to count (or, under
// a sanitizer, which owns them, observed through its hooks): how many allocations any
// thread makes while counting, and how many blocks and bytes the process holds.
#pragma once

#include <cstdint>

// Under a sanitizer its runtime owns the allocation functions; the hooks that count
// then see malloc's blocks too.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define JSONL_SANITIZER_OWNS_ALLOCATION 1
#endif
#endif

namespace counted_heap {

// Allocations made by any thread between start_counting() and stop_counting().
void start_counting() noexcept;
void stop_counting() noexcept;
std::uint64_t allocations() noexcept;

// What the process holds on the heap now: blocks and bytes allocated and not yet freed.
// Only differences between two readings mean anything (the runtime's own blocks from
// before main are in both).
struct Held {
  std::int64_t blocks = 0;
  std::int64_t bytes = 0;
};
Held held() noexcept;

}  // namespace counted_heap
