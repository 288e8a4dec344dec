// Tile kernels over LAPACKE/CBLAS (tile_kernels.hpp).
#include "tile_kernels.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <stdexcept>
#include <string>

namespace cholesky {

void potrf(double* akk, int nk) {
  const lapack_int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', nk, akk, nk);
  if (info != 0)
    throw std::runtime_error("dpotrf on a diagonal tile failed: info " + std::to_string(info));
}

void trsm(const double* lkk, int nk, double* aik, int mi) {
  cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, mi, nk, 1.0, lkk, nk,
              aik, mi);
}

void syrk(const double* aik, int mi, int nk, double* aii) {
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, mi, nk, -1.0, aik, mi, 1.0, aii, mi);
}

void gemm(const double* aik, int mi, const double* ajk, int mj, int nk, double* aij) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, mi, mj, nk, -1.0, aik, mi, ajk, mj, 1.0, aij,
              mi);
}

bool use_one_blas_thread() {
  openblas_set_num_threads(1);
  return openblas_get_parallel() == 1;  // 0 serial, 1 pthread, 2 OpenMP
}

}  // namespace cholesky
