#pragma once
// Pooled memory for task objects and shared states: per-thread free lists by size class, so
// the spawn/complete path does no heap allocation in steady state. A block freed on another
// thread goes to that thread's list; lists above a high-water mark hand half to a global
// list (locked, amortised: once per thousands of blocks).
#include <atomic>
#include <cstddef>
#include <new>

#include "grain/detail/config.hpp"

namespace grain::detail {

inline constexpr std::size_t small_block_max = 512;
inline constexpr std::size_t small_local_max = 4096;  // blocks a thread keeps per class

constexpr unsigned size_class_of(std::size_t n) noexcept {
  return n <= 64 ? 0 : n <= 128 ? 1 : n <= 256 ? 2 : 3;
}

struct small_block {
  small_block* next;
};

// A thread's free lists. Only its thread changes them; the counts are atomic (relaxed loads
// and stores, the code of plain ones) so that small_blocks_in_use() may read them from another
// thread.
struct small_free_lists {
  small_block* head[4] = {};
  std::atomic<std::size_t> count[4] = {};
};

// The slow paths (small_allocator.cpp): a thread's first use, an empty list, a full one.
void* small_allocate_slow(unsigned size_class);
void small_deallocate_slow(void* p, unsigned size_class) noexcept;
void small_spill(unsigned size_class) noexcept;

// The calling thread's lists, nullptr before its first use; read afresh at every call, since
// user threads migrate between OS threads (config.hpp, GRAIN_FRESH_TLS_READER). Without such
// a reader the fast paths below are out of line.
#if GRAIN_HAS_FRESH_TLS_READER
GRAIN_FRESH_TLS_READER(thread_small_lists, small_free_lists*, "grain_detail_small_lists")

// Inline: two calls per task, and the call cost as much as the list operation.
inline void* small_allocate(unsigned c) {
  small_free_lists* l = thread_small_lists();
  if (GRAIN_LIKELY(l != nullptr))
    if (small_block* b = l->head[c]) {
      l->head[c] = b->next;
      l->count[c].store(l->count[c].load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
      return b;
    }
  return small_allocate_slow(c);
}

inline void small_deallocate(void* p, unsigned c) noexcept {
  small_free_lists* l = thread_small_lists();
  if (GRAIN_UNLIKELY(l == nullptr)) return small_deallocate_slow(p, c);
  auto* b = static_cast<small_block*>(p);
  b->next = l->head[c];
  l->head[c] = b;
  const std::size_t n = l->count[c].load(std::memory_order_relaxed) + 1;
  l->count[c].store(n, std::memory_order_relaxed);
  if (GRAIN_UNLIKELY(n > small_local_max)) small_spill(c);
}
#else
void* small_allocate(unsigned size_class);
void small_deallocate(void* p, unsigned size_class) noexcept;
#endif

template <class T>
inline void* allocate_for() {
  if constexpr (sizeof(T) <= small_block_max && alignof(T) <= 16) {
    return small_allocate(size_class_of(sizeof(T)));
  } else {
    return ::operator new (sizeof(T), std::align_val_t{alignof(T)});
  }
}

template <class T>
inline void deallocate_for(void* p) noexcept {
  if constexpr (sizeof(T) <= small_block_max && alignof(T) <= 16) {
    small_deallocate(p, size_class_of(sizeof(T)));
  } else {
    ::operator delete (p, std::align_val_t{alignof(T)});
  }
}

}  // namespace grain::detail
