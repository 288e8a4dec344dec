#pragma once
// The three ways grain-lulesh runs the leapfrog: one thread, OpenMP parallel loops, and grain
// tasks. All three call the same kernels (kernels.hpp) on the same partitions, inject the
// same load, and end with the same state of the domain, to the last bit.
#include <cstdint>

#include "domain.hpp"
#include "halo.hpp"
#include "injection.hpp"
#include "options.hpp"
#include "partition_schedule.hpp"

namespace lulesh {

struct run_result {
  double seconds = 0;                     // the time loop only, as the reference measures it
  index_t partition = 0, partitions = 0;  // at the end of the run
  unsigned threads = 1;
};

// One thread (--variant=serial) or OpenMP (--variant=omp): a parallel loop over the
// partitions per phase, schedule as --schedule says; fork-join, with the time-step bounds
// combined after the last phase, as in the reference.
run_result run_loops(domain& d, const options& o, injector& inject);

// --variant=grain: the step as a dataflow of partition tasks (run_grain.cpp). Call it from a
// grain task, one per domain of the locality. The partition size comes from `schedule`
// (the knob, read once per cycle for all the locality's domains); `reports_steps`: this domain
// raises the iteration event. `h`: the neighbour domains on other localities (null or
// inactive: none).
run_result run_grain(domain& d, const options& o, injector& inject, partition_schedule& schedule,
                     bool reports_steps, const halo* h);

}  // namespace lulesh
