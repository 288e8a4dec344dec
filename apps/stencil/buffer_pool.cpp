#include "buffer_pool.hpp"

#include <new>

namespace stencil {

buffer_pool& buffer_pool::instance() {
  static buffer_pool pool;
  return pool;
}

double* buffer_pool::allocate(std::size_t n) {
  if (n < min_pooled) return new double[n];
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
  if (n >= min_pooled) {
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
