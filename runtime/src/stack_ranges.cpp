// Registry of stack reservations readable from a signal handler (stack_ranges.hpp).
#include "stack_ranges.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace grain::detail::stack_ranges {

// In use while lo != 0; published by storing lo last.
struct entry {
  std::atomic<std::uintptr_t> lo{0};
  std::atomic<std::uintptr_t> hi{0};
};

namespace {

constexpr std::size_t per_block = 1024;

struct block {
  entry entries[per_block];
  std::atomic<block*> next{nullptr};
};

std::atomic<block*> g_head{nullptr};

// What only the writers touch. Never destroyed: a pool may unmap its stacks during static
// destruction.
struct writer_state {
  std::mutex mutex;
  block* tail = nullptr;
  std::size_t used = 0;      // entries ever handed out
  std::vector<entry*> free;  // removed entries to reuse
};

writer_state& writers() {
  static auto* s = new writer_state;
  return *s;
}

entry* fresh_entry(writer_state& w) {
  if (!w.free.empty()) {
    entry* e = w.free.back();
    w.free.pop_back();
    return e;
  }
  if (w.used % per_block == 0) {
    // Never freed: a handler may be walking the list at any time.
    auto* b = new block;
    if (w.tail)
      w.tail->next.store(b, std::memory_order_release);
    else
      g_head.store(b, std::memory_order_release);
    w.tail = b;
  }
  return &w.tail->entries[w.used++ % per_block];
}

}  // namespace

entry* add(const void* lo, std::size_t bytes) {
  const auto l = reinterpret_cast<std::uintptr_t>(lo);
  writer_state& w = writers();
  std::lock_guard lock(w.mutex);
  // remove() must not allocate: room for every entry there is.
  if (w.free.capacity() < w.used + 1) w.free.reserve(2 * (w.used + 1));
  entry* e = fresh_entry(w);
  e->hi.store(l + bytes, std::memory_order_relaxed);
  e->lo.store(l, std::memory_order_release);
  return e;
}

void remove(entry* e) noexcept {
  if (!e) return;
  writer_state& w = writers();
  std::lock_guard lock(w.mutex);
  e->lo.store(0, std::memory_order_release);
  w.free.push_back(e);  // capacity reserved by add()
}

bool contains(const void* addr) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  for (block* b = g_head.load(std::memory_order_acquire); b;
       b = b->next.load(std::memory_order_acquire)) {
    for (const auto& e : b->entries) {
      const std::uintptr_t lo = e.lo.load(std::memory_order_acquire);
      if (lo != 0 && a >= lo && a < e.hi.load(std::memory_order_relaxed)) return true;
    }
  }
  return false;
}

}  // namespace grain::detail::stack_ranges
