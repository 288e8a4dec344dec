#pragma once
// Recycles the arrays of large partitions.
//
// Every time step allocates a new array per partition and frees the old one. glibc serves
// arrays above its mmap threshold (32 MB at most, less before its first free) with fresh
// mappings, so every page of every step is faulted in again: with one 80 MB partition that is
// 20,000 page faults per step, more time than the computation. Arrays of at least
// `min_pooled` doubles are therefore kept for reuse by exact size, under a lock (there are
// few of them per step). Smaller arrays are kept in a cache per thread, without a lock.
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace stencil {

class buffer_pool {
 public:
  static constexpr std::size_t min_pooled = 4096;  // 32 KiB

  static buffer_pool& instance();
  buffer_pool() = default;
  buffer_pool(const buffer_pool&) = delete;
  buffer_pool& operator=(const buffer_pool&) = delete;
  ~buffer_pool();

  double* allocate(std::size_t n);
  void deallocate(double* p, std::size_t n) noexcept;
  // Keep at most this many bytes of free arrays (the rest goes back to the system).
  void set_capacity(std::size_t bytes);
  std::size_t cached_bytes() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<double*>> free_;  // by size in doubles
  std::size_t cached_ = 0;                                      // bytes in free_
  std::size_t capacity_ = std::size_t(1) << 28;
};

}  // namespace stencil
