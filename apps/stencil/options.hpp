#pragma once
// Command line of grain-stencil (the --grain: options belong to the runtime and are skipped).
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "partition.hpp"

namespace stencil {

struct options {
  std::size_t nx = 10;       // points per partition (HPX's default)
  std::size_t np = 10;       // partitions
  std::size_t points = 0;    // --points: total points instead of np (np = ceil(points / nx))
  std::size_t nt = 45;       // time steps
  parameters params;         // --k, --dt, --dx
  bool verify = false;       // compare with the serial computation
  bool results = false;      // print the final values like HPX
  bool print_steps = false;  // one line per time step
  bool localities = false;   // spread the ring over every locality (distributed_ring.hpp)
  int repeat = 1;
  std::size_t check_every = 1;  // read the stencil.nx knob every K step boundaries
  // Time steps in flight at most: `window` for the first `grow_after` steps after the start
  // and after each re-partitioning (a policy's change takes effect soon), then `max_window`
  // (a stable grain gets a deeper pipeline). window 0: all steps at once, like HPX.
  std::size_t window = 2;
  std::size_t max_window = 0;  // 0: max(window, default_max_window)
  static constexpr std::size_t default_max_window = 4;
  static constexpr std::size_t grow_after = 4;
  // Submit a step's partitions from tasks of this many each, in parallel (0: the driver alone).
  std::size_t submit_chunk = 1024;
  // The first `settle` steps: step t is submitted only after step t - 1 has ended and the
  // listeners (policies) have handled its iteration event, so a policy's answer to the first
  // step acts on the very next one. A step spent at a bad grain costs several good ones.
  std::size_t settle = 1;
  // Before step 0, when the initial condition is written at the first step's grain: write a
  // probe of it as tasks, take a counter snapshot and let the policies handle it, then write
  // the rest at the grain they chose, so that their answer shapes step 0 itself.
  bool settle_init = true;
  // Partitions of a running step split what they have left when stencil.nx drops to at most
  // half of it (elastic.hpp).
  bool split = true;
  // --midstep-at=STEP:NX: set stencil.nx to NX right after STEP was submitted, while it runs
  // (its partitions split; the next step is planned with NX). Repeatable.
  std::vector<std::pair<std::size_t, std::size_t>> midstep_at;
  // --repartition-at=STEP:NX: set stencil.nx to NX at the boundary before STEP (repeatable).
  std::vector<std::pair<std::size_t, std::size_t>> repartition_at;
  bool help = false;

  std::size_t total() const noexcept { return points != 0 ? points : nx * np; }
};

// Parses everything that does not start with --grain:. Throws std::invalid_argument with a
// message that names the option on any bad input.
options parse_options(int argc, char** argv);

std::string usage();

}  // namespace stencil
