#pragma once
// grain-collectives-bench's command line and the workload every variant runs (Wickramasinghe et al.
// 2017 Fig. 1): per iteration and rank, region A = `tasks` tasks of injected load, each producing a
// value; B = the global sum of those values (local, then global: the two-level reduction); C =
// independent work of `overlap_units` quanta (off, one sequential piece, or parallel pieces of
// `overlap_quantum` quanta); D = the check of B's result, after B and C.
#include <cstdint>
#include <string>
#include <vector>

#include "load_injection.hpp"

namespace collectives_bench {

// The shared load injection (apps/common), by the names this benchmark has always used.
using load_injection::calibrate;
using load_injection::check;
using load_injection::distribution;
using load_injection::distribution_from_name;
using load_injection::distribution_name;
using load_injection::iterations_per_us;
using load_injection::load_spec;
using load_injection::set_iterations_per_us;
using load_injection::spin_us;
using load_injection::units;

enum class variant { grain, omp_static, omp_dynamic, omp_tasks, omp_iallreduce, mpi };
enum class overlap_mode { off, sequential, parallel };

struct config {
  variant v = variant::grain;
  std::string variant_name = "grain";
  long iterations = 200, warmup = 10;
  long threads = 1;  // OpenMP threads; grain workers unless --grain:threads is given
  long tasks = 0;    // per rank per iteration; 0: threads
  load_spec load;
  overlap_mode overlap = overlap_mode::off;
  double overlap_units = 0;    // C per rank per iteration, in quanta
  double overlap_quantum = 1;  // a parallel piece of C, in quanta
  long lookahead = 1;          // grain: iterations whose B may still be in flight
  bool latency = false;        // 8-byte all_reduce latency instead of the workload
  bool calibrate_only = false;
};

struct bad_option {
  std::string message;
};

// The program's own options (--grain:... are left for the runtime). Throws bad_option.
config parse(int argc, char** argv);
std::string usage();
const char* overlap_name(overlap_mode m);

// The value of global task g (exact in a double, so the sum is checked exactly) and the sum
// over the job of one iteration.
inline double task_value(std::uint64_t g) {
  return static_cast<double>(g % 7 + 1);
}
inline double expected_sum(std::uint64_t ranks, std::uint64_t tasks) {
  double s = 0;
  for (std::uint64_t g = 0; g < ranks * tasks; ++g) s += task_value(g);
  return s;
}
// Region C of one rank and iteration as pieces, in microseconds.
std::vector<double> overlap_pieces(const config& c);

// The result line rank 0 prints (scripts/sweep-collectives reads it).
void print_result(const config& c, std::uint32_t ranks, double seconds, long errors);

}  // namespace collectives_bench
