#include "grain/detail/small_allocator.hpp"

#include "grain/detail/config.hpp"

#include <cstdlib>
#include <mutex>
#include <new>

namespace grain::detail {
namespace {

constexpr std::size_t class_size[4] = {64, 128, 256, 512};
constexpr std::size_t local_max = 4096;  // blocks kept per thread and class
constexpr std::size_t batch = 256;       // blocks moved to/from the global list at once

struct block {
  block* next;
};

// Global lists of batches, under a mutex: touched once per `batch` allocations at most.
struct global_lists {
  std::mutex m;
  block* head[4] = {};
  std::size_t count[4] = {};
};
global_lists& globals() {
  static global_lists* g = new global_lists();  // never destroyed: threads may free late
  return *g;
}

struct local_lists {
  block* head[4] = {};
  std::size_t count[4] = {};
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
    }
  }
};

GRAIN_NOINLINE local_lists& locals() {
  // Not inlined: see current_worker() — user threads migrate between OS threads.
  static thread_local local_lists l;
  asm volatile("" ::: "memory");
  return l;
}

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
      ++l.count[c];
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
    l.count[c] += n;
  }
  block* b = l.head[c];
  l.head[c] = b->next;
  --l.count[c];
  return b;
}

void spill(local_lists& l, unsigned c) {
  auto& g = globals();
  std::lock_guard lock(g.m);
  for (std::size_t i = 0; i < local_max / 2; ++i) {
    block* b = l.head[c];
    l.head[c] = b->next;
    --l.count[c];
    b->next = g.head[c];
    g.head[c] = b;
    ++g.count[c];
  }
}

}  // namespace

void* small_allocate(unsigned c) {
  local_lists& l = locals();
  if (block* b = l.head[c]) {
    l.head[c] = b->next;
    --l.count[c];
    return b;
  }
  return refill(l, c);
}

void small_deallocate(void* p, unsigned c) noexcept {
  local_lists& l = locals();
  auto* b = static_cast<block*>(p);
  b->next = l.head[c];
  l.head[c] = b;
  if (++l.count[c] > local_max) spill(l, c);
}

}  // namespace grain::detail
