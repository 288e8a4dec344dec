#pragma once
// grain-stencil --localities: the heat ring spread over every locality (HPX's 1d_stencil_8
// shape). Rank r owns the contiguous block [r*N/R, (r+1)*N/R) and steps it itself; before a
// step it posts its first point to its left neighbour and its last point to its right one
// (parcels), computes the partitions that need no ghost point while those travel, then the
// two edge partitions. The partition size of each block is that rank's own knob stencil.nx,
// read at every step boundary, and each rank reports its steps as "iteration" events, so
// adaptive_grain.lua (started on every rank by the same --grain:policy) tunes every block.
#include <cstdint>
#include <vector>

#include "options.hpp"

namespace stencil {

struct distributed_result {
  double seconds = 0;
  std::vector<double> u;  // the whole ring after the last step (when gathered)
  // Per rank: the partition size of its first and its last step.
  std::vector<std::uint64_t> first_nx, final_nx;
};

// Called on rank 0 (from a task): runs o.nt steps on every locality; gathers the ring when
// `gather`.
distributed_result run_distributed(const options& o, bool gather);

}  // namespace stencil
