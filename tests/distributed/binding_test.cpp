// Each rank's workers stay on the PUs mpirun bound the rank to (docs/thread-mapping.md, "The
// process's binding"): two ranks on a 2-core machine once both pinned their worker to PU 0.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <vector>

#include "actions.hpp"

namespace grain::test::dist {
namespace {

TEST(Binding, EveryRanksWorkersStayInsideTheRanksBinding) {
  std::vector<future<cpu_binding>> fs;
  for (auto l : find_all_localities()) fs.push_back(grain::async(l, action<&binding_here>{}));
  for (std::size_t r = 0; r < fs.size(); ++r) {
    const cpu_binding b = fs[r].get();
    ASSERT_FALSE(b.worker.empty()) << "locality#" << r;
    for (int cpu : b.worker) {
      bool inside = false;
      for (int p : b.process) inside = inside || p == cpu;
      EXPECT_TRUE(inside) << "locality#" << r << ": a worker may run on CPU " << cpu
                          << ", outside the process's binding";
    }
  }
}

}  // namespace
}  // namespace grain::test::dist
