#pragma once
// The tiled right-looking Cholesky as a dataflow graph: one future per tile version, each
// task (POTRF, TRSM, SYRK, GEMM) a grain::dataflow on the futures of the tiles it reads and
// writes, so a task starts when its inputs are ready and there is no barrier between the
// steps k. Tasks are named by kind ("potrf", …: the names traces, counters and
// --grain:critical=auto see); `route` says which executor each kind runs on.
#include <string>
#include <vector>

#include "../critical/routing.hpp"
#include "tiled_matrix.hpp"

namespace cholesky {

inline const std::vector<std::string>& kinds() {
  static const std::vector<std::string> k{"potrf", "trsm", "syrk", "gemm"};
  return k;
}

// Factors m in place (its lower tiles become L). Rethrows a kernel's error (not SPD).
void factor(tiled_matrix& m, const critical::routing& route);

// Floating-point operations of an n×n Cholesky, n³/3 (the LAPACK working note count).
double flops(int n);

}  // namespace cholesky
