#pragma once
// The serial reference for --verify: the same ring, the same update rule, one array.
#include <cstddef>
#include <vector>

#include "partition.hpp"

namespace stencil {

// The ring of `total` points after `steps` time steps, from the initial condition u[g] = g.
inline std::vector<double> serial_solution(std::size_t total, std::size_t steps,
                                           const parameters& p) {
  std::vector<double> u(total), next(total);
  for (std::size_t g = 0; g < total; ++g) u[g] = static_cast<double>(g);
  const std::size_t last = total - 1;
  const double c = coefficient(p);
  for (std::size_t t = 0; t < steps; ++t) {
    if (total == 1) {
      next[0] = heat(c, u[0], u[0], u[0]);
    } else {
      next[0] = heat(c, u[last], u[0], u[1]);
      for (std::size_t g = 1; g < last; ++g) next[g] = heat(c, u[g - 1], u[g], u[g + 1]);
      next[last] = heat(c, u[last - 1], u[last], u[0]);
    }
    u.swap(next);
  }
  return u;
}

}  // namespace stencil
