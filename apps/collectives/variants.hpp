#pragma once
// The variants of grain-collectives-bench, one file each: grain (variant_grain.cpp) and the MPI
// peers, MPI+OpenMP and MPI only (variant_mpi.cpp). Each returns main's exit status.
#include "bench_config.hpp"

namespace collectives_bench {

int run_grain(const config& cfg, int argc, char** argv);
// omp-static, omp-dynamic, omp-tasks, omp-iallreduce, mpi; a message and status 2 when the
// program was built without MPI or OpenMP.
int run_mpi(const config& cfg, int argc, char** argv);

}  // namespace collectives_bench
