#pragma once
// Work-stealing deque of pointers (Chase & Lev 2005, with the C11 memory orders of Lê et al.,
// PPoPP 2013). The owner pushes and pops at the bottom (LIFO, cache-warm); thieves steal from
// the top (FIFO, the oldest and usually largest work). Grown arrays are retired, not freed,
// until the deque dies, because a thief may still read from an old one.
//
// The owner's pop and a thief's steal are a Dekker pair (each stores its end, then reads the
// other's): the textbook pop pays a full fence for it on every task. Here the pop's side is an
// asymmetric light fence and the steal's the heavy one (asymmetric_fence.hpp): a task nobody
// steals costs the owner no locked instruction, and a thief pays a membarrier per steal
// attempt on a deque that looks non-empty (an idle thief probing empty deques pays nothing
// more than before). Every item stays stealable at every moment, unlike a split deque.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "asymmetric_fence.hpp"
#include "grain/detail/config.hpp"

namespace grain::detail {

template <class T>
class chase_lev_deque {
  static_assert(std::is_pointer_v<T>);

  struct array {
    explicit array(std::int64_t cap)
        : capacity(cap), mask(cap - 1), slots(new std::atomic<T>[cap]) {}
    std::int64_t capacity;
    std::int64_t mask;
    std::unique_ptr<std::atomic<T>[]> slots;
    // acquire/release on the slots (plain moves on x86) so that ThreadSanitizer, which does
    // not model the standalone fences, sees the hand-over of the task's fields.
    T get(std::int64_t i) const noexcept { return slots[i & mask].load(std::memory_order_acquire); }
    void put(std::int64_t i, T v) noexcept { slots[i & mask].store(v, std::memory_order_release); }
  };

 public:
  explicit chase_lev_deque(std::int64_t capacity = 256) {
    retired_.push_back(std::make_unique<array>(capacity));
    array_.store(retired_.back().get(), std::memory_order_relaxed);
  }
  chase_lev_deque(const chase_lev_deque&) = delete;
  chase_lev_deque& operator=(const chase_lev_deque&) = delete;

  // Owner only. True if the deque looked empty before (spawn wakes a sleeper only then).
  bool push(T v) {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    std::int64_t t = top_.load(std::memory_order_acquire);
    array* a = array_.load(std::memory_order_relaxed);
    if (GRAIN_UNLIKELY(b - t > a->capacity - 1)) a = grow(a, t, b);
    a->put(b, v);
    std::atomic_thread_fence(std::memory_order_release);
    bottom_.store(b + 1, std::memory_order_relaxed);
    return b <= t;
  }

  // Owner only. nullptr when empty.
  T pop() noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    array* a = array_.load(std::memory_order_relaxed);
    bottom_.store(b, std::memory_order_relaxed);
    light_fence();  // pairs with steal's heavy_fence
    std::int64_t t = top_.load(std::memory_order_relaxed);
    T v = nullptr;
    if (t <= b) {
      v = a->get(b);
      if (t == b) {
        if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                          std::memory_order_relaxed)) {
          v = nullptr;
        }
        bottom_.store(b + 1, std::memory_order_relaxed);
      }
    } else {
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
    return v;
  }

  // Owner only: the item pop() would return, without removing it (may be stolen meanwhile).
  T peek_bottom() const noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    std::int64_t t = top_.load(std::memory_order_acquire);
    if (b <= t) return nullptr;
    return array_.load(std::memory_order_relaxed)->get(b - 1);
  }

  // Any thread. nullptr when empty or when it lost a race.
  T steal() noexcept {
    std::int64_t t = top_.load(std::memory_order_acquire);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::int64_t b = bottom_.load(std::memory_order_acquire);
    if (t >= b) return nullptr;
    if (g_asymmetric_fences) {
      // Between the read of top and the read of bottom, as the fence it stands for: the
      // owner's pop in flight has either published its decrement of bottom by now, or will
      // read a top at least t (and then take the last item only through the CAS).
      heavy_fence();
      b = bottom_.load(std::memory_order_acquire);
    }
    if (t < b) {
      array* a = array_.load(std::memory_order_acquire);
      T v = a->get(t);
      if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        return nullptr;
      }
      return v;
    }
    return nullptr;
  }

  // Any thread; approximate.
  std::size_t size() const noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    std::int64_t t = top_.load(std::memory_order_relaxed);
    return b > t ? static_cast<std::size_t>(b - t) : 0;
  }
  bool empty() const noexcept { return size() == 0; }

 private:
  array* grow(array* old, std::int64_t t, std::int64_t b) {
    auto bigger = std::make_unique<array>(old->capacity * 2);
    for (std::int64_t i = t; i < b; ++i) bigger->put(i, old->get(i));
    array* a = bigger.get();
    retired_.push_back(std::move(bigger));
    array_.store(a, std::memory_order_release);
    return a;
  }

  alignas(cache_line) std::atomic<std::int64_t> top_{0};
  alignas(cache_line) std::atomic<std::int64_t> bottom_{0};
  alignas(cache_line) std::atomic<array*> array_{nullptr};
  std::vector<std::unique_ptr<array>> retired_;  // owner only (grow)
};

}  // namespace grain::detail
