// The pooled allocator of task objects and shared states (small_allocator.hpp), with its
// in-use accounting (pool_accounting.hpp).
#include "grain/detail/small_allocator.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>

#include "grain/detail/config.hpp"
#include "grain/detail/pool_accounting.hpp"

namespace grain::detail {
namespace {

constexpr std::size_t class_size[4] = {64, 128, 256, 512};
constexpr std::size_t local_max = small_local_max;
constexpr std::size_t batch = 256;  // blocks moved to/from the global list at once

using block = small_block;

std::size_t get(const std::atomic<std::size_t>& n) noexcept {
  return n.load(std::memory_order_relaxed);
}
void set(std::atomic<std::size_t>& n, std::size_t v) noexcept {
  n.store(v, std::memory_order_relaxed);
}

struct local_lists;

}  // namespace

// The thread's lists: a constant-initialised thread-local pointer, so the hot path is one
// %fs-relative load with no TLS guard (a `static thread_local local_lists` behind a noinline
// accessor cost ~12 instructions per call, two calls per task). The inline fast paths
// (small_allocator.hpp) read it by its assembler name.
thread_local small_free_lists* tl_lists asm("grain_detail_small_lists") = nullptr;

namespace {

// Global lists of batches, under a mutex: touched once per `batch` allocations at most. Also
// the registry of the threads' lists and the blocks ever carved, for small_blocks_in_use().
struct global_lists {
  std::mutex m;
  block* head[4] = {};
  std::size_t count[4] = {};
  std::atomic<std::size_t> carved{0};  // all classes
  local_lists* threads = nullptr;      // under m
};
global_lists& globals() {
  static global_lists* g = new global_lists();  // never destroyed: threads may free late
  return *g;
}

struct local_lists : small_free_lists {
  local_lists* prev = nullptr;  // the registry, under globals().m
  local_lists* next = nullptr;

  local_lists() {
    auto& g = globals();
    std::lock_guard lock(g.m);
    next = g.threads;
    if (next) next->prev = this;
    g.threads = this;
  }
  ~local_lists() {
    auto& g = globals();
    std::lock_guard lock(g.m);
    for (int c = 0; c < 4; ++c) {
      while (block* b = head[c]) {
        head[c] = b->next;
        b->next = g.head[c];
        g.head[c] = b;
        ++g.count[c];
      }
      set(count[c], 0);
    }
    (prev ? prev->next : g.threads) = next;
    if (next) next->prev = prev;
    tl_lists = nullptr;
  }
};

GRAIN_NOINLINE local_lists& make_locals() {
  static thread_local local_lists l;  // destroyed (its blocks handed back) at thread exit
  tl_lists = &l;
  return l;
}

local_lists& locals() {
  auto* l = static_cast<local_lists*>(tl_lists);
  return GRAIN_LIKELY(l != nullptr) ? *l : make_locals();
}

// Cold: once per `batch` or `local_max / 2` blocks.
void* refill(local_lists& l, unsigned c) {
  {
    auto& g = globals();
    std::lock_guard lock(g.m);
    for (std::size_t i = 0; i < batch && g.head[c]; ++i) {
      block* b = g.head[c];
      g.head[c] = b->next;
      --g.count[c];
      b->next = l.head[c];
      l.head[c] = b;
      set(l.count[c], get(l.count[c]) + 1);
    }
  }
  if (!l.head[c]) {
    // A fresh chunk carved into blocks (cache-line aligned).
    const std::size_t n = batch;
    auto* chunk = static_cast<char*>(::operator new (n* class_size[c], std::align_val_t{64}));
    for (std::size_t i = 0; i < n; ++i) {
      auto* b = reinterpret_cast<block*>(chunk + i * class_size[c]);
      b->next = l.head[c];
      l.head[c] = b;
    }
    set(l.count[c], get(l.count[c]) + n);
    globals().carved.fetch_add(n, std::memory_order_relaxed);
  }
  block* b = l.head[c];
  l.head[c] = b->next;
  set(l.count[c], get(l.count[c]) - 1);
  return b;
}

void spill(local_lists& l, unsigned c) {
  auto& g = globals();
  std::lock_guard lock(g.m);
  for (std::size_t i = 0; i < local_max / 2; ++i) {
    block* b = l.head[c];
    l.head[c] = b->next;
    set(l.count[c], get(l.count[c]) - 1);
    b->next = g.head[c];
    g.head[c] = b;
    ++g.count[c];
  }
}

}  // namespace

void* small_allocate_slow(unsigned c) {
  local_lists& l = locals();
  if (block* b = l.head[c]) {
    l.head[c] = b->next;
    set(l.count[c], get(l.count[c]) - 1);
    return b;
  }
  return refill(l, c);
}

void small_deallocate_slow(void* p, unsigned c) noexcept {
  local_lists& l = locals();
  auto* b = static_cast<block*>(p);
  b->next = l.head[c];
  l.head[c] = b;
  const std::size_t n = get(l.count[c]) + 1;
  set(l.count[c], n);
  if (n > local_max) spill(l, c);
}

void small_spill(unsigned c) noexcept {
  spill(locals(), c);
}

#if !GRAIN_HAS_FRESH_TLS_READER
void* small_allocate(unsigned c) {
  return small_allocate_slow(c);
}
void small_deallocate(void* p, unsigned c) noexcept {
  small_deallocate_slow(p, c);
}
#endif

std::int64_t small_blocks_in_use() noexcept {
  auto& g = globals();
  std::lock_guard lock(g.m);
  auto in_use = static_cast<std::int64_t>(g.carved.load(std::memory_order_relaxed));
  for (int c = 0; c < 4; ++c) {
    in_use -= static_cast<std::int64_t>(g.count[c]);
    for (local_lists* l = g.threads; l; l = l->next)
      in_use -= static_cast<std::int64_t>(get(l->count[c]));
  }
  return in_use;
}

}  // namespace grain::detail
