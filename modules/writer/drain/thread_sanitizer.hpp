// What ThreadSanitizer cannot see for itself: an order between threads that a library
// built without it establishes inside its own code (Debian's oneTBB waits for its tasks
// there). A header of the drain's implementation (side_by_side.cpp); outside a TSan
// build both calls do nothing.
#pragma once

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#include <sanitizer/tsan_interface.h>
#endif
#endif

namespace jsonl::detail {

// What this thread did so far happens before whatever a thread does after a later
// `order_acquire` of the same `sync`. Releases to one `sync` add up.
inline void order_release([[maybe_unused]] const void* sync) noexcept {
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
  __tsan_release(const_cast<void*>(sync));
#endif
#endif
}

// What every earlier `order_release` of `sync` followed happens before what this thread
// does next.
inline void order_acquire([[maybe_unused]] const void* sync) noexcept {
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
  __tsan_acquire(const_cast<void*>(sync));
#endif
#endif
}

// order_release(sync) when it goes out of scope, by a return or an exception alike.
struct ReleaseOnExit {
  const void* sync;
  ~ReleaseOnExit() { order_release(sync); }
};

}  // namespace jsonl::detail
