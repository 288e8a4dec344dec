#pragma once
// grain-stencil --localities: the heat ring spread over every locality (HPX's 1d_stencil_8
// shape). Rank r owns the contiguous block [r*N/R, (r+1)*N/R) and steps it as a dataflow of
// partitions, like the single-process solver: partition i of step t + 1 waits for partitions
// i - 1, i, i + 1 of step t, the two edge partitions also for the ghost point their neighbour
// rank posted (a parcel), and an edge partition posts its own edge point the moment it has
// computed it. There is no barrier between steps, so the ghosts travel while the interior of
// the next step runs; at most two steps are in flight. The partition size of each block is
// that rank's own knob stencil.nx, read at every step boundary (a new value waits for the
// steps in flight, then re-partitions), and each rank reports its steps as "iteration" events
// (step_tracker), so adaptive_grain.lua (started on every rank by the same --grain:policy)
// tunes every block.
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
