#pragma once
// The two arrays that hold the heat ring: step t reads its points from generation t % 2 and
// writes the next step's into generation (t + 1) % 2.
//
// They are allocated once, for all runs, and every partition of every step is a view into one
// of them (partition_view), so that a time step and a change of the partitioning allocate
// nothing. Per-partition arrays cost a re-partition tens of milliseconds — several steps at a
// good grain — in new mappings and their page faults (and in copying the points).
//
// Writing into the array that the step before last was read from is safe because of the
// dependencies alone (solver.cpp): the task that writes points [b, e) of step t + 1 waits for
// every step-t partition that overlaps [b - 1, e + 1), and those are exactly the step-t tasks
// that read points [b, e) of step t - 1, whatever the two partitionings are.
#include <cstddef>
#include <memory>

namespace stencil {

class generations {
 public:
  // Allocates without touching the memory: the first writes fault the pages in, and the
  // solver makes them parallel (solver::initial).
  explicit generations(std::size_t total)
      : total_(total),
        buffers_{std::make_unique_for_overwrite<double[]>(total),
                 std::make_unique_for_overwrite<double[]>(total)} {}

  std::size_t total() const noexcept { return total_; }
  // The points of the input of time step t (t = 0: the initial condition).
  double* of(std::size_t t) noexcept { return buffers_[t % 2].get(); }

  // Whether the pages of both arrays have been written once (by the first run).
  bool touched = false;

 private:
  std::size_t total_;
  std::unique_ptr<double[]> buffers_[2];
};

}  // namespace stencil
