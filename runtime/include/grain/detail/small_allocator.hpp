#pragma once
// Pooled memory for task objects and shared states: per-thread free lists by size class, so
// the spawn/complete path does no heap allocation in steady state. A block freed on another
// thread goes to that thread's list; lists above a high-water mark hand half to a global
// list (locked, amortised: once per thousands of blocks).
#include <cstddef>
#include <new>

namespace grain::detail {

inline constexpr std::size_t small_block_max = 512;

constexpr unsigned size_class_of(std::size_t n) noexcept {
  return n <= 64 ? 0 : n <= 128 ? 1 : n <= 256 ? 2 : 3;
}

void* small_allocate(unsigned size_class);
void small_deallocate(void* p, unsigned size_class) noexcept;

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
