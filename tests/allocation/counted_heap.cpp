// Replaces the global allocation functions to count every allocation and to track the
// blocks and bytes held; under a sanitizer, whose runtime defines those functions
// itself, installs its allocation hooks instead (they see malloc's blocks too) and asks
// it for the bytes held.
#include "counted_heap.hpp"

#include <malloc.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#ifdef JSONL_SANITIZER_OWNS_ALLOCATION
#include <sanitizer/allocator_interface.h>
#endif

namespace {

std::atomic<bool> counting{false};
std::atomic<std::uint64_t> counted{0};
std::atomic<std::int64_t> held_blocks{0};
std::atomic<std::int64_t> held_bytes{0};

void allocated(std::size_t bytes) {
  if (counting.load(std::memory_order_relaxed)) counted.fetch_add(1, std::memory_order_relaxed);
  held_blocks.fetch_add(1, std::memory_order_relaxed);
  held_bytes.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
}

void freed(std::size_t bytes) {
  held_blocks.fetch_sub(1, std::memory_order_relaxed);
  held_bytes.fetch_sub(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
}

}  // namespace

namespace counted_heap {

void start_counting() noexcept {
  counted = 0;
  counting = true;
}

void stop_counting() noexcept { counting = false; }

std::uint64_t allocations() noexcept { return counted.load(); }

Held held() noexcept {
#ifdef JSONL_SANITIZER_OWNS_ALLOCATION
  return {held_blocks.load(), static_cast<std::int64_t>(__sanitizer_get_current_allocated_bytes())};
#else
  return {held_blocks.load(), held_bytes.load()};
#endif
}

}  // namespace counted_heap

#ifdef JSONL_SANITIZER_OWNS_ALLOCATION
namespace {
void on_allocation(const volatile void*, std::size_t bytes) { allocated(bytes); }
void on_free(const volatile void*) { freed(0); }
[[maybe_unused]] const int hooks_installed = __sanitizer_install_malloc_and_free_hooks(on_allocation, on_free);
}  // namespace
#else
namespace {
void* allocate(std::size_t size, std::size_t alignment = alignof(std::max_align_t)) {
  void* block = alignment <= alignof(std::max_align_t)
                    ? std::malloc(size == 0 ? 1 : size)
                    : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (block) allocated(malloc_usable_size(block));
  return block;
}

void release(void* block) noexcept {
  if (!block) return;
  freed(malloc_usable_size(block));
  std::free(block);
}
}  // namespace

void* operator new(std::size_t size) {
  if (void* block = allocate(size)) return block;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, std::align_val_t alignment) {
  if (void* block = allocate(size, static_cast<std::size_t>(alignment))) return block;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t alignment) { return operator new(size, alignment); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return allocate(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return allocate(size, static_cast<std::size_t>(alignment));
}
void operator delete(void* block) noexcept { release(block); }
void operator delete[](void* block) noexcept { release(block); }
void operator delete(void* block, std::size_t) noexcept { release(block); }
void operator delete[](void* block, std::size_t) noexcept { release(block); }
void operator delete(void* block, std::align_val_t) noexcept { release(block); }
void operator delete[](void* block, std::align_val_t) noexcept { release(block); }
void operator delete(void* block, std::size_t, std::align_val_t) noexcept { release(block); }
void operator delete[](void* block, std::size_t, std::align_val_t) noexcept { release(block); }
void operator delete(void* block, const std::nothrow_t&) noexcept { release(block); }
void operator delete[](void* block, const std::nothrow_t&) noexcept { release(block); }
void operator delete(void* block, std::align_val_t, const std::nothrow_t&) noexcept { release(block); }
void operator delete[](void* block, std::align_val_t, const std::nothrow_t&) noexcept { release(block); }
#endif
