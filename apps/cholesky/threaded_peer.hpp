#pragma once
// The peer grain-cholesky is measured against: one LAPACKE_dpotrf on the whole matrix by
// OpenBLAS's threaded (pthread) build with its own threads = the worker count. It is the same
// library the tile kernels call with its threads forced to 1 (tile_kernels.hpp says why): the
// thread count is raised for this call only, while no task runs.
namespace cholesky {

struct peer_result {
  double seconds = 0;
  int threads = 0;
  double residual = 0;  // 0 when not checked
};

// Factors the n×n test matrix (spd_entry) with `threads` OpenBLAS threads after one warm-up
// call (OpenBLAS starts its threads and sizes its buffers on the first). Throws
// std::runtime_error when dpotrf fails.
peer_result run_threaded_dpotrf(int n, int threads, bool check);

}  // namespace cholesky
