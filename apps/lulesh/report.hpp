#pragma once
// The end-of-run report in LULESH 2.0's layout (iteration count, origin energy, the symmetry
// test of the z = 0 plane, elapsed time, grind time, figure of merit), and the -p lines.
#include <string>

#include "domain.hpp"

namespace lulesh {

struct symmetry {
  real max_abs = 0, total_abs = 0, max_rel = 0;
};

// |e(j, k) - e(k, j)| over the z = 0 plane of the domain: the problem is symmetric in x and y.
symmetry symmetry_test(const domain& d);

void print_banner(const problem& p, int ranks, const std::string& how);
void print_progress(const domain& d);
// `ranks` domains of `d.size`^3 elements each; `how` a last line naming variant and workers.
void print_report(const domain& d, int ranks, double elapsed_s, const std::string& how);

}  // namespace lulesh
