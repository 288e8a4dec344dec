// One threaded LAPACKE_dpotrf on the whole matrix (threaded_peer.hpp).
#include "threaded_peer.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "tile_kernels.hpp"
#include "tiled_matrix.hpp"

namespace cholesky {

namespace {

std::vector<double> dense_spd(int n) {
  std::vector<double> a(static_cast<std::size_t>(n) * n, 0.0);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) a[static_cast<std::size_t>(j) * n + i] = spd_entry(n, i, j);
  return a;
}

void dpotrf(std::vector<double>& a, int n) {
  const lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, a.data(), n);
  if (info != 0) throw std::runtime_error("threaded dpotrf failed: info " + std::to_string(info));
}

}  // namespace

peer_result run_threaded_dpotrf(int n, int threads, bool check) {
  openblas_set_num_threads(threads);
  peer_result r;
  r.threads = threads;
  try {
    const int w = std::min(n, 256);
    auto warm = dense_spd(w);
    dpotrf(warm, w);
    auto a = dense_spd(n);
    const auto t0 = std::chrono::steady_clock::now();
    dpotrf(a, n);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (check) {
      for (int j = 1; j < n; ++j)  // dpotrf leaves the strict upper triangle: zero it for L
        for (int i = 0; i < j; ++i) a[static_cast<std::size_t>(j) * n + i] = 0.0;
      r.residual = residual(n, a);
    }
  } catch (...) {
    use_one_blas_thread();
    throw;
  }
  use_one_blas_thread();
  return r;
}

}  // namespace cholesky
