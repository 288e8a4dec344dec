#pragma once
// The N×N symmetric positive-definite matrix as nt×nt tiles of b×b (the last row and column
// of tiles ragged when b does not divide N), each tile its own column-major block: the unit a
// task of the tiled Cholesky reads and writes. Only the lower triangle of tiles is stored.
// Also what checks a result: the dense copy and the residual ‖A − L·Lᵀ‖_F / ‖A‖_F.
#include <cstddef>
#include <vector>

namespace cholesky {

class tiled_matrix {
 public:
  tiled_matrix(int n, int b);

  int n() const noexcept { return n_; }
  int b() const noexcept { return b_; }
  int tiles() const noexcept { return nt_; }
  int rows(int i) const noexcept { return i + 1 < nt_ ? b_ : n_ - b_ * (nt_ - 1); }
  double* tile(int i, int j) noexcept { return tiles_[index(i, j)].data(); }

  // The test matrix: symmetric, entries in [0, 1) from a hash of (i, j) plus n on the
  // diagonal, so it is diagonally dominant (SPD) and the same for every tile size.
  void fill_spd();
  // Column-major dense n×n copy of the lower triangle (the upper left zero).
  std::vector<double> dense_lower() const;

 private:
  std::size_t index(int i, int j) const noexcept {
    return static_cast<std::size_t>(i) * (i + 1) / 2 + j;
  }
  int n_, b_, nt_;
  std::vector<std::vector<double>> tiles_;  // lower triangle, row by row of tiles
};

// The value fill_spd puts at (i, j) of the whole matrix.
double spd_entry(int n, int i, int j) noexcept;

// ‖A − L·Lᵀ‖_F / ‖A‖_F with A from spd_entry and L the dense lower factor (column-major).
double residual(int n, const std::vector<double>& l);

}  // namespace cholesky
