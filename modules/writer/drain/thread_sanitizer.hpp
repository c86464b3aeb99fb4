// What ThreadSanitizer cannot see for itself: an order between threads that a library
// built without it establishes inside its own code (Debian's oneTBB waits for its tasks
// there). A header of the drain's implementation (side_by_side.cpp).
//
// order_release(sync): what this thread did so far happens before whatever a thread does
// after a later order_acquire of the same `sync`; releases to one `sync` add up.
// order_acquire(sync): what every earlier order_release of `sync` followed happens
// before what this thread does next. Outside a TSan build both do nothing.
#pragma once

#if __has_feature(thread_sanitizer)
#include <sanitizer/tsan_interface.h>

namespace jsonl::detail {
inline void order_release(const void* sync) noexcept { __tsan_release(const_cast<void*>(sync)); }
inline void order_acquire(const void* sync) noexcept { __tsan_acquire(const_cast<void*>(sync)); }
}  // namespace jsonl::detail
#else
namespace jsonl::detail {
inline void order_release(const void*) noexcept {}
inline void order_acquire(const void*) noexcept {}
}  // namespace jsonl::detail
#endif

namespace jsonl::detail {

// order_release(sync) when it goes out of scope, by a return or an exception alike.
struct ReleaseOnExit {
  const void* sync;
  ~ReleaseOnExit() { order_release(sync); }
};

}  // namespace jsonl::detail
