#pragma once
// Work-stealing deque of pointers (Chase & Lev 2005, with the C11 memory orders of Lê et al.,
// PPoPP 2013). The owner pushes and pops at the bottom (LIFO, cache-warm); thieves steal from
// the top (FIFO, the oldest and usually largest work). Grown arrays are retired, not freed,
// until the deque dies, because a thief may still read from an old one.
//
// The owner's pop and a thief's steal are a Dekker pair (each stores its end, then reads the
// other's): the textbook pop pays a full fence for it on every task. How each side fences is
// the fence mode (asymmetric_fence.hpp):
// - symmetric: a full fence on both sides, always;
// - asymmetric: the pop's fence is a compiler barrier and every steal attempt on a non-empty
//   deque pays a membarrier (the heavy fence) between its reads of top and bottom;
// - adaptive (the default where membarrier works): each deque chooses. While nobody steals from
//   it, its pops fence lightly and a thief that comes pays the heavy fence and asks the owner
//   to fence fully; the owner does so from its next pop on, and fences lightly again after
//   quiet_pops_to_light pops with no steal, once no thief is inside a steal. A thief that finds
//   the owner fencing fully steals with an ordinary fence. A spawn storm that rarely steals
//   pays no locked instruction per pop; a program whose workers steal all the time pays what
//   the symmetric mode pays, plus a membarrier per quiet stretch.
// Every item stays stealable at every moment in every mode, unlike a split deque.
//
// Why the adaptive switch is safe (docs/design/hot-path.md, "Adaptive fences"): a light pop never
// overlaps a cheap steal. A cheap steal counts itself in (thieves_, a locked add) before it
// reads full_; the owner turns full_ off with a full fence before it reads thieves_, and turns
// it back on when it finds a thief counted in: Dekker again, on a path the owner takes once per
// quiet stretch. The owner turns full_ on with a release store after a light pop, so a thief
// that reads it also sees that pop's bottom. A heavy steal is safe against either kind of pop.
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
    // The full case finishes the push out of line: with no call on it, the common path needs
    // no stack frame in its caller (every spawn).
    if (GRAIN_UNLIKELY(b - t > a->capacity - 1)) return push_grown(v, a, t, b);
    return publish(a, v, t, b);
  }

  // Owner only. nullptr when empty. Inline: it is half of every task's scheduling.
  GRAIN_ALWAYS_INLINE T pop() noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    array* a = array_.load(std::memory_order_relaxed);
    bottom_.store(b, std::memory_order_relaxed);
    if (light_)
      std::atomic_signal_fence(std::memory_order_seq_cst);  // a heavy steal fences for both
    else
      std::atomic_thread_fence(std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_relaxed);
    if (g_fence_mode == fence_mode::adaptive) choose_fence(t);
    T v = nullptr;
    if (t <= b) {
      v = a->get(b);
      if (t == b) {
        if (top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                         std::memory_order_relaxed))
          last_top_ = b + 1;  // our own move of top is no steal
        else
          v = nullptr;
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

  // Any thread. nullptr when empty or when it lost a race. `membarriers`, when given, counts
  // the heavy fences this attempt paid (the /threads/count/heavy-steals counter).
  T steal(std::uint64_t* membarriers = nullptr) noexcept {
    std::int64_t t = top_.load(std::memory_order_acquire);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::int64_t b = bottom_.load(std::memory_order_acquire);
    if (t >= b) return nullptr;  // an idle thief probing empty deques pays nothing more
    switch (g_fence_mode) {
      case fence_mode::symmetric:
        return take_top(t, b);
      case fence_mode::asymmetric:
        // Between the read of top and the read of bottom, as the fence it stands for: the
        // owner's pop in flight has either published its decrement of bottom by now, or will
        // read a top at least t (and then take the last item only through the CAS).
        heavy_fence();
        if (membarriers) ++*membarriers;
        return take_top(t, bottom_.load(std::memory_order_acquire));
      case fence_mode::adaptive:
        break;
    }
    thieves_.fetch_add(1, std::memory_order_seq_cst);
    t = top_.load(std::memory_order_acquire);
    if (full_.load(std::memory_order_seq_cst)) {
      std::atomic_thread_fence(std::memory_order_seq_cst);  // the owner fences fully meanwhile
    } else {
      heavy_fence();
      if (membarriers) ++*membarriers;
      wants_full_.store(true, std::memory_order_relaxed);
    }
    T v = take_top(t, bottom_.load(std::memory_order_acquire));
    thieves_.fetch_sub(1, std::memory_order_release);
    return v;
  }

  // Owner only (adaptive mode): whether pops fence lightly now, and how often that changed.
  bool fences_lightly() const noexcept { return light_; }
  std::uint64_t fence_switches() const noexcept { return fence_switches_; }

  // Any thread; approximate.
  std::size_t size() const noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    std::int64_t t = top_.load(std::memory_order_relaxed);
    return b > t ? static_cast<std::size_t>(b - t) : 0;
  }
  bool empty() const noexcept { return size() == 0; }

 private:
  GRAIN_NOINLINE bool push_grown(T v, array* a, std::int64_t t, std::int64_t b) {
    return publish(grow(a, t, b), v, t, b);
  }
  // The end of a push: the item, then the bottom that makes it visible to thieves.
  GRAIN_ALWAYS_INLINE bool publish(array* a, T v, std::int64_t t, std::int64_t b) {
    a->put(b, v);
    std::atomic_thread_fence(std::memory_order_release);
    bottom_.store(b + 1, std::memory_order_relaxed);
    return b <= t;  // the deque looked empty before
  }

  array* grow(array* old, std::int64_t t, std::int64_t b) {
    auto bigger = std::make_unique<array>(old->capacity * 2);
    for (std::int64_t i = t; i < b; ++i) bigger->put(i, old->get(i));
    array* a = bigger.get();
    retired_.push_back(std::move(bigger));
    array_.store(a, std::memory_order_release);
    return a;
  }

  T take_top(std::int64_t t, std::int64_t b) noexcept {
    if (t >= b) return nullptr;
    array* a = array_.load(std::memory_order_acquire);
    T v = a->get(t);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed))
      return nullptr;
    return v;
  }

  // Owner only (adaptive mode), after each pop's read of top.
  GRAIN_ALWAYS_INLINE void choose_fence(std::int64_t t) noexcept {
    if (light_) {
      if (GRAIN_UNLIKELY(wants_full_.load(std::memory_order_relaxed))) fence_fully();
    } else if (t != last_top_) {  // a steal since the last pop
      last_top_ = t;
      quiet_pops_ = 0;
    } else if (GRAIN_UNLIKELY(++quiet_pops_ >= quiet_pops_to_light)) {
      fence_lightly();
    }
  }
  GRAIN_NOINLINE void fence_fully() noexcept {
    ++fence_switches_;
    wants_full_.store(false, std::memory_order_relaxed);
    light_ = false;
    quiet_pops_ = 0;
    last_top_ = top_.load(std::memory_order_relaxed);
    full_.store(true, std::memory_order_release);  // after the light pops: a thief sees them
  }
  GRAIN_NOINLINE void fence_lightly() noexcept {
    quiet_pops_ = 0;
    wants_full_.store(false, std::memory_order_relaxed);  // before: a later request stands
    full_.store(false, std::memory_order_seq_cst);
    if (thieves_.load(std::memory_order_seq_cst) != 0) {  // one may rely on our full fences
      full_.store(true, std::memory_order_release);
      return;
    }
    ++fence_switches_;
    light_ = true;
  }

  static constexpr unsigned quiet_pops_to_light = 256;

  alignas(cache_line) std::atomic<std::int64_t> top_{0};
  alignas(cache_line) std::atomic<std::int64_t> bottom_{0};
  // The owner's fence choice (adaptive mode): bottom_'s line, which the owner writes anyway
  // and thieves read anyway.
  std::atomic<bool> full_{true};
  // Owner only: this pop fences lightly. Always in the asymmetric mode, which is chosen before
  // any deque is made (asymmetric_fence.hpp); the adaptive mode switches it (choose_fence).
  bool light_ = g_fence_mode == fence_mode::asymmetric;
  unsigned quiet_pops_ = 0;
  std::int64_t last_top_ = 0;
  std::uint64_t fence_switches_ = 0;
  // Written by thieves only: the ones inside an adaptive steal, and "fence fully, please".
  alignas(cache_line) std::atomic<int> thieves_{0};
  std::atomic<bool> wants_full_{false};
  alignas(cache_line) std::atomic<array*> array_{nullptr};
  std::vector<std::unique_ptr<array>> retired_;  // owner only (grow)
};

}  // namespace grain::detail
