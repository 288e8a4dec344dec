// Tiles, the test matrix and the residual check (tiled_matrix.hpp).
#include "tiled_matrix.hpp"

#include <cblas.h>

#include <cmath>
#include <cstdint>

namespace cholesky {

tiled_matrix::tiled_matrix(int n, int b) : n_(n), b_(b), nt_((n + b - 1) / b) {
  tiles_.resize(static_cast<std::size_t>(nt_) * (nt_ + 1) / 2);
  for (int i = 0; i < nt_; ++i)
    for (int j = 0; j <= i; ++j)
      tiles_[index(i, j)].assign(static_cast<std::size_t>(rows(i)) * rows(j), 0.0);
}

double spd_entry(int n, int i, int j) noexcept {
  if (i < j) std::swap(i, j);
  std::uint64_t x = (static_cast<std::uint64_t>(i) << 32) ^ static_cast<std::uint64_t>(j);
  x += 0x9E3779B97F4A7C15ull;  // splitmix64
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  const double u = static_cast<double>(x >> 11) * 0x1.0p-53;
  return i == j ? u + n : u;
}

void tiled_matrix::fill_spd() {
  for (int ti = 0; ti < nt_; ++ti)
    for (int tj = 0; tj <= ti; ++tj) {
      double* t = tile(ti, tj);
      const int m = rows(ti);
      for (int c = 0; c < rows(tj); ++c)
        for (int r = 0; r < m; ++r)
          t[static_cast<std::size_t>(c) * m + r] = spd_entry(n_, ti * b_ + r, tj * b_ + c);
    }
}

std::vector<double> tiled_matrix::dense_lower() const {
  std::vector<double> l(static_cast<std::size_t>(n_) * n_, 0.0);
  for (int ti = 0; ti < nt_; ++ti)
    for (int tj = 0; tj <= ti; ++tj) {
      const double* t = tiles_[index(ti, tj)].data();
      const int m = rows(ti);
      for (int c = 0; c < rows(tj); ++c)
        for (int r = 0; r < m; ++r) {
          const int gi = ti * b_ + r, gj = tj * b_ + c;
          if (gi >= gj)
            l[static_cast<std::size_t>(gj) * n_ + gi] = t[static_cast<std::size_t>(c) * m + r];
        }
    }
  return l;
}

double residual(int n, const std::vector<double>& l) {
  // L·Lᵀ's lower triangle by one syrk; A − L·Lᵀ is symmetric, so the lower triangle counts
  // twice off the diagonal in both norms.
  std::vector<double> llt(static_cast<std::size_t>(n) * n, 0.0);
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, n, n, 1.0, l.data(), n, 0.0, llt.data(), n);
  double diff2 = 0, a2 = 0;
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) {
      const double a = spd_entry(n, i, j);
      const double d = a - llt[static_cast<std::size_t>(j) * n + i];
      const double w = i == j ? 1.0 : 2.0;
      diff2 += w * d * d;
      a2 += w * a * a;
    }
  return std::sqrt(diff2 / a2);
}

}  // namespace cholesky
