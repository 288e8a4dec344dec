#include "buffer_pool.hpp"

#include <cstdint>
#include <new>

namespace stencil {

namespace {

// Small arrays: a cache per thread for the two sizes in use (the partition size, and the
// smaller last partition). An array freed on another worker than the one that allocated it
// would otherwise go back to its arena under a lock, and glibc's own per-thread cache holds
// only 7 arrays per size.
struct small_cache {
  static constexpr std::size_t max_bytes = std::size_t(8) << 20;  // per size
  struct slot {
    std::size_t size = 0;  // in doubles; 0: unused
    std::uint64_t used = 0;
    std::vector<double*> arrays;
  };
  slot slots[2];
  std::uint64_t clock = 0;

  slot* find(std::size_t n) noexcept {
    for (slot& s : slots)
      if (s.size == n) return &s;
    return nullptr;
  }
  // The slot for n, taking over the least recently used one (its arrays are stale: the
  // partition size changed).
  slot& take(std::size_t n) noexcept {
    slot* s = find(n);
    if (!s) {
      s = slots[0].used <= slots[1].used ? &slots[0] : &slots[1];
      for (double* p : s->arrays) delete[] p;
      s->arrays.clear();
      s->size = n;
    }
    s->used = ++clock;
    return *s;
  }
  ~small_cache() {
    for (slot& s : slots)
      for (double* p : s.arrays) delete[] p;
  }
};

thread_local small_cache cache;

}  // namespace

buffer_pool& buffer_pool::instance() {
  static buffer_pool pool;
  return pool;
}

buffer_pool::~buffer_pool() {
  for (auto& [size, list] : free_)
    for (double* p : list) delete[] p;
}

double* buffer_pool::allocate(std::size_t n) {
  if (n < min_pooled) {
    if (auto* s = cache.find(n); s && !s->arrays.empty()) {
      s->used = ++cache.clock;
      double* p = s->arrays.back();
      s->arrays.pop_back();
      return p;
    }
    return new double[n];
  }
  {
    std::lock_guard lock(mutex_);
    auto it = free_.find(n);
    if (it != free_.end() && !it->second.empty()) {
      double* p = it->second.back();
      it->second.pop_back();
      cached_ -= n * sizeof(double);
      return p;
    }
    // A miss: arrays of another size are left over from before a re-partition; give one
    // back so that stale sizes do not hold the capacity forever.
    for (auto& [size, list] : free_) {
      if (size != n && !list.empty()) {
        delete[] list.back();
        list.pop_back();
        cached_ -= size * sizeof(double);
        break;
      }
    }
  }
  return new double[n];
}

void buffer_pool::deallocate(double* p, std::size_t n) noexcept {
  if (!p) return;
  if (n < min_pooled) {
    auto& s = cache.take(n);
    if (s.arrays.size() * n * sizeof(double) < small_cache::max_bytes) {
      try {
        s.arrays.push_back(p);
        return;
      } catch (...) {
        // No memory for the list entry: free the array instead.
      }
    }
  } else {
    std::lock_guard lock(mutex_);
    if (cached_ + n * sizeof(double) <= capacity_) {
      try {
        free_[n].push_back(p);
        cached_ += n * sizeof(double);
        return;
      } catch (...) {
        // No memory for the list entry: free the array instead.
      }
    }
  }
  delete[] p;
}

void buffer_pool::set_capacity(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  capacity_ = bytes;
}

std::size_t buffer_pool::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_;
}

}  // namespace stencil
