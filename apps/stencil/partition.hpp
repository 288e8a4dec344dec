#pragma once
// The update rule of HPX's 1d_stencil_4, and what a partition of the heat ring is.
#include <cstddef>

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

// A partition of one time step: the points [first, first + size()) of the ring, held in that
// step's generation buffer (see generations.hpp). It owns nothing, so changing the
// partitioning between steps copies and allocates nothing.
class partition_view {
 public:
  partition_view() = default;
  partition_view(const double* data, std::size_t first, std::size_t size) noexcept
      : data_(data), first_(first), size_(size) {}

  const double* data() const noexcept { return data_; }  // the point `first`
  std::size_t first() const noexcept { return first_; }
  std::size_t size() const noexcept { return size_; }
  double operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  const double* data_ = nullptr;
  std::size_t first_ = 0, size_ = 0;
};

// Points [b, e) of the next step `out` from the whole ring `in` of `total` points (point 0's
// left neighbour is point total - 1, and the other way round). `in` and `out` are the two
// generation buffers, never the same array.
inline void heat_range(const parameters& p, const double* __restrict in, double* __restrict out,
                       std::size_t total, std::size_t b, std::size_t e) {
  const double c = coefficient(p);
  const std::size_t last = total - 1;
  if (total == 1) {
    out[0] = heat(c, in[0], in[0], in[0]);
    return;
  }
  std::size_t g = b;
  if (g == 0) {
    out[0] = heat(c, in[last], in[0], in[1]);
    g = 1;
  }
  // restrict and the plain neighbour indices let the compiler vectorise this loop.
  const std::size_t stop = e < last ? e : last;
  for (; g < stop; ++g) out[g] = heat(c, in[g - 1], in[g], in[g + 1]);
  if (e == total) out[last] = heat(c, in[last - 1], in[last], in[0]);
}

}  // namespace stencil
