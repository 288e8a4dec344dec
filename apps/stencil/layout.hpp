#pragma once
// How the ring of `total` points is cut into partitions of `nx` points: ceil(total / nx)
// partitions, all of nx points except the last, which holds the rest.
#include <algorithm>
#include <cstddef>

namespace stencil {

struct layout {
  std::size_t total = 0;
  std::size_t nx = 1;

  std::size_t count() const noexcept { return (total + nx - 1) / nx; }
  std::size_t begin(std::size_t i) const noexcept { return i * nx; }
  std::size_t end(std::size_t i) const noexcept { return std::min(total, (i + 1) * nx); }
  std::size_t size(std::size_t i) const noexcept { return end(i) - begin(i); }
  // The partition holding global point g.
  std::size_t owner(std::size_t g) const noexcept { return g / nx; }
};

}  // namespace stencil
