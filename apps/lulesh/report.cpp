#include "report.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace lulesh {

symmetry symmetry_test(const domain& d) {
  symmetry s;
  const index_t nx = d.size;
  for (index_t j = 0; j < nx; ++j)
    for (index_t k = j + 1; k < nx; ++k) {
      const real diff = std::fabs(d.e[j * nx + k] - d.e[k * nx + j]);
      s.total_abs += diff;
      if (s.max_abs < diff) s.max_abs = diff;
      const real rel = diff / d.e[k * nx + j];
      if (s.max_rel < rel) s.max_rel = rel;
    }
  return s;
}

void print_banner(const problem& p, int ranks, const std::string& how) {
  std::printf("Running problem size %d^3 per domain until completion\n", p.size);
  std::printf("Num processors: %d\n", ranks);
  std::printf("%s\n", how.c_str());
  std::printf("Total number of elements: %lld \n\n",
              static_cast<long long>(ranks) * p.size * p.size * p.size);
  std::printf(
      "To run other sizes, use -s <integer>.\n"
      "To run a fixed number of iterations, use -i <integer>.\n"
      "To run a more or less balanced region set, use -b <integer>.\n"
      "To change the relative costs of regions, use -c <integer>.\n"
      "To print out progress, use -p\n"
      "See help (-h) for more options\n\n");
}

void print_progress(const domain& d) {
  std::printf("cycle = %d, time = %e, dt=%e\n", d.cycle, d.time, d.deltatime);
}

void print_report(const domain& d, int ranks, double elapsed_s, const std::string& how) {
  const auto nx = static_cast<std::int64_t>(d.size);
  const double zones = static_cast<double>(nx * nx * nx);
  const double per_cycle_us = elapsed_s * 1e6 / d.cycle;
  const double grind_dom = per_cycle_us / zones;
  const double grind_all = per_cycle_us / (zones * ranks);
  const symmetry s = symmetry_test(d);
  std::printf("Run completed:\n");
  std::printf("   Problem size        =  %d\n", d.size);
  std::printf("   MPI tasks           =  %d\n", ranks);
  std::printf("   Iteration count     =  %d\n", d.cycle);
  std::printf("   Final Origin Energy =  %12.6e\n", d.e[0]);
  std::printf("   Testing Plane 0 of Energy Array on rank 0:\n");
  std::printf("        MaxAbsDiff   = %12.6e\n", s.max_abs);
  std::printf("        TotalAbsDiff = %12.6e\n", s.total_abs);
  std::printf("        MaxRelDiff   = %12.6e\n", s.max_rel);
  std::printf("\nElapsed time         = %10.2f (s)\n", elapsed_s);
  std::printf("Grind time (us/z/c)  = %10.8g (per dom)  (%10.8g overall)\n", grind_dom, grind_all);
  std::printf("FOM                  = %10.8g (z/s)\n\n", 1000.0 / grind_all);
  std::printf("Final origin energy (all digits) = %.16e\n", d.e[0]);
  std::printf("%s\n", how.c_str());
}

}  // namespace lulesh
