// grain-collectives-bench: the load-imbalance study of Wickramasinghe et al. 2017 — a two-phase
// reduction under injected load, with optional overlapped work, in grain and in the MPI+OpenMP and
// MPI-only styles, one variant per run (scripts/sweep-collectives runs them side by side).
//   mpirun -np R grain-collectives-bench --variant=V [--dist=D --a=X --b=Y] [--overlap=...]
// Prints one "result ..." line on rank 0 (microseconds per iteration, errors = wrong sums).
// Options are checked before MPI or the runtime starts: a bad one exits with status 2.
#include <cstdio>
#include <string_view>

#include "bench_config.hpp"
#include "variants.hpp"

int main(int argc, char** argv) {
  using namespace collectives_bench;
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
      std::fputs(usage().c_str(), stdout);
      std::fputs("grain's own options (with --variant=grain): run with --grain:help\n", stdout);
      return 0;
    }
  config c;
  try {
    c = parse(argc, argv);
  } catch (const bad_option& e) {
    std::fprintf(stderr, "grain-collectives-bench: %s\n%s", e.message.c_str(), usage().c_str());
    return 2;
  }
  if (c.calibrate_only) {
    std::printf("iters_per_us=%.3f\n", calibrate());
    return 0;
  }
  iterations_per_us();  // calibrate (or take --iters-per-us) before any timing
  return c.v == variant::grain ? run_grain(c, argc, argv) : run_mpi(c, argc, argv);
}
