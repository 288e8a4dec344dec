#pragma once
// The four tile kernels of the right-looking tiled Cholesky, each one call into OpenBLAS
// (LAPACKE for potrf, CBLAS for the rest) with OpenBLAS's threads forced to 1: the tasks are
// the parallelism, and a threaded BLAS inside every task would oversubscribe the workers.
// Not Debian's serial build (libopenblas0-serial 0.3.21): it is not safe to call from two
// threads at once — two threads calling 1×1 dgemm/dsyrk got 587 wrong results in 800,000, and
// grain-cholesky --n=24 --b=1 on 2 workers a wrong factor in 4 runs of 40 (docs/critical-pools.md).
// The pthread build locks its buffers, and is the one the threaded peer uses.
// Tiles are column-major with their row count as leading dimension; m_* are row counts.
namespace cholesky {

// A_kk = L_kk with A_kk = L_kk·L_kkᵀ; throws std::runtime_error when A_kk is not SPD.
void potrf(double* akk, int nk);
// A_ik = A_ik·L_kk⁻ᵀ.
void trsm(const double* lkk, int nk, double* aik, int mi);
// A_ii = A_ii − A_ik·A_ikᵀ (lower triangle).
void syrk(const double* aik, int mi, int nk, double* aii);
// A_ij = A_ij − A_ik·A_jkᵀ.
void gemm(const double* aik, int mi, const double* ajk, int mj, int nk, double* aij);

// Forces OpenBLAS to one thread per call; false when the library linked is not OpenBLAS's
// pthread build (the serial one is unsafe here, see above).
bool use_one_blas_thread();

}  // namespace cholesky
