#pragma once
// One partition of the heat ring and the update rule of HPX's 1d_stencil_4.
#include <cstddef>
#include <utility>

#include "buffer_pool.hpp"

namespace stencil {

struct parameters {
  double k = 0.5;   // heat transfer coefficient
  double dt = 1.0;  // time step
  double dx = 1.0;  // grid spacing
};

// The factor of the update rule, k dt / dx^2.
inline double coefficient(const parameters& p) {
  return p.k * p.dt / (p.dx * p.dx);
}

// The temperature of a point in the next step from its left neighbour, itself and its right
// neighbour (c = coefficient()). The serial reference calls the same function, so a correct
// parallel run matches it bit for bit, whatever the partitioning.
inline double heat(double c, double left, double middle, double right) {
  return middle + c * (left - 2 * middle + right);
}

// A contiguous run of points, move-only. The array is left uninitialised on purpose: every
// producer writes every element, and zero-filling 80 MB per time step would cost a memory pass.
class partition_data {
 public:
  partition_data() = default;
  explicit partition_data(std::size_t size)
      : data_(buffer_pool::instance().allocate(size)), size_(size) {}
  // Initial condition of 1d_stencil_4: the point with global index g holds the value g, so the
  // problem does not depend on how it is partitioned.
  partition_data(std::size_t size, std::size_t first_global) : partition_data(size) {
    for (std::size_t i = 0; i < size; ++i) data_[i] = static_cast<double>(first_global + i);
  }
  partition_data(partition_data&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  partition_data& operator=(partition_data&& o) noexcept {
    if (this != &o) {
      buffer_pool::instance().deallocate(data_, size_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~partition_data() { buffer_pool::instance().deallocate(data_, size_); }

  std::size_t size() const noexcept { return size_; }
  double* data() noexcept { return data_; }
  const double* data() const noexcept { return data_; }
  double& operator[](std::size_t i) noexcept { return data_[i]; }
  double operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  double* data_ = nullptr;
  std::size_t size_ = 0;
};

// Next step of `middle` given its ring neighbours. Partitions may have different sizes (the last
// one is smaller when nx does not divide the total) and may be of size 1; with one partition
// left, middle and right are the same object.
inline partition_data heat_part(const parameters& p, const partition_data& left,
                                const partition_data& middle, const partition_data& right) {
  const std::size_t n = middle.size();
  const double c = coefficient(p);
  partition_data next(n);
  // restrict: the output never aliases the input, which lets the compiler vectorise the loop.
  double* __restrict out = next.data();
  const double* __restrict in = middle.data();
  if (n == 1) {
    out[0] = heat(c, left[left.size() - 1], in[0], right[0]);
    return next;
  }
  out[0] = heat(c, left[left.size() - 1], in[0], in[1]);
  for (std::size_t i = 1; i + 1 < n; ++i) out[i] = heat(c, in[i - 1], in[i], in[i + 1]);
  out[n - 1] = heat(c, in[n - 2], in[n - 1], right[0]);
  return next;
}

}  // namespace stencil
