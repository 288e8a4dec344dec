#pragma once
// grain-lulesh's command line: LULESH 2.0's options (-s -i -r -b -c -p -q -h) and grain's
// own (--variant, --schedule, --partition, --threads, --inject...).
#include <cstdint>
#include <string>

#include "domain.hpp"
#include "load_injection.hpp"

namespace lulesh {

enum class variant { grain, omp, serial };
enum class omp_schedule { static_schedule, dynamic_schedule, guided_schedule };

const char* variant_name(variant v);
const char* schedule_name(omp_schedule s);

struct options {
  problem prob;
  index_t iterations = 9999999;  // -i
  bool progress = false;         // -p
  bool quiet = false;            // -q
  bool help = false;
  variant var = variant::grain;
  omp_schedule schedule = omp_schedule::static_schedule;
  int threads = 0;               // OpenMP threads (0: OpenMP's default)
  index_t partition = 0;         // elements per partition (0: automatic); the knob lulesh.partition
  int domains_per_locality = 1;  // --domains-per-locality: K domains on each locality
  // The tasks on the time step's critical path (material, clock): --priority=critical runs them
  // at high priority, --priority=pool in the pool "critical" (--grain:pools=critical:N, Jiang et
  // al. 2020's decoupled pool, whose split critical_pool.lua can move); none (the default,
  // faster in docs/lulesh.md's measurement): all alike.
  enum class critical_route { none, priority, pool };
  critical_route critical = critical_route::none;
  // Load injection into the six heaviest loops (Wickramasinghe et al. 2017 section V).
  bool inject = false;
  load_injection::load_spec load;
  double iters_per_us = 0;  // spin calibration (0: measure at start)
};

struct bad_option {
  std::string message;
};

// Throws bad_option with a message naming the option.
options parse_options(int argc, char** argv);
std::string usage();

}  // namespace lulesh
