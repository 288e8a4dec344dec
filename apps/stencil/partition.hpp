#pragma once
// One partition of the heat ring and the update rule of HPX's 1d_stencil_4.
#include <cstddef>
#include <memory>

namespace stencil {

struct parameters {
  double k = 0.5;   // heat transfer coefficient
  double dt = 1.0;  // time step
  double dx = 1.0;  // grid spacing
};

// The temperature of a point in the next step from its left neighbour, itself and its right
// neighbour. The serial reference calls the same function, so a correct parallel run matches it
// bit for bit, whatever the partitioning.
inline double heat(const parameters& p, double left, double middle, double right) {
  return middle + (p.k * p.dt / (p.dx * p.dx)) * (left - 2 * middle + right);
}

// A contiguous run of points, move-only. The array is left uninitialised on purpose: every
// producer writes every element, and zero-filling 80 MB per time step would cost a memory pass.
class partition_data {
 public:
  partition_data() = default;
  explicit partition_data(std::size_t size) : data_(new double[size]), size_(size) {}
  // Initial condition of 1d_stencil_4: the point with global index g holds the value g, so the
  // problem does not depend on how it is partitioned.
  partition_data(std::size_t size, std::size_t first_global) : partition_data(size) {
    for (std::size_t i = 0; i < size; ++i) data_[i] = static_cast<double>(first_global + i);
  }

  std::size_t size() const noexcept { return size_; }
  double* data() noexcept { return data_.get(); }
  const double* data() const noexcept { return data_.get(); }
  double& operator[](std::size_t i) noexcept { return data_[i]; }
  double operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  std::unique_ptr<double[]> data_;
  std::size_t size_ = 0;
};

// Next step of `middle` given its ring neighbours. Partitions may have different sizes (the last
// one is smaller when nx does not divide the total) and may be of size 1; with one partition
// left, middle and right are the same object.
inline partition_data heat_part(const parameters& p, const partition_data& left,
                                const partition_data& middle, const partition_data& right) {
  const std::size_t n = middle.size();
  partition_data next(n);
  if (n == 1) {
    next[0] = heat(p, left[left.size() - 1], middle[0], right[0]);
    return next;
  }
  next[0] = heat(p, left[left.size() - 1], middle[0], middle[1]);
  for (std::size_t i = 1; i + 1 < n; ++i)
    next[i] = heat(p, middle[i - 1], middle[i], middle[i + 1]);
  next[n - 1] = heat(p, middle[n - 2], middle[n - 1], right[0]);
  return next;
}

}  // namespace stencil
