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
#include <cstdint>
#include <memory>

namespace stencil {

class generations {
 public:
  // Allocates without touching the memory: the first writes fault the pages in, and the
  // solver makes them parallel (solver::initial).
  explicit generations(std::size_t total)
      : total_(total), memory_(std::make_unique_for_overwrite<double[]>(2 * total + slack)) {
    // Both arrays start on a cache line, and point g of one is not a multiple of 4 KiB away
    // from point g of the other: a step reads one where it writes the other, and a load whose
    // address matches an earlier store's in the low 12 bits waits for it (4K aliasing).
    // Two separate allocations of this size would be page-aligned alike.
    const auto address = reinterpret_cast<std::uintptr_t>(memory_.get());
    const std::size_t align = (line - address % line) % line / sizeof(double);
    const std::size_t apart = (distance - total % page + page) % page;  // in doubles
    buffers_[0] = memory_.get() + align;
    buffers_[1] = buffers_[0] + total + apart;
  }

  std::size_t total() const noexcept { return total_; }
  // The points of the input of time step t (t = 0: the initial condition).
  double* of(std::size_t t) noexcept { return buffers_[t % 2]; }

  // Whether the pages of both arrays have been written once (by the first run).
  bool touched = false;

 private:
  static constexpr std::size_t line = 64;                     // bytes
  static constexpr std::size_t page = 4096 / sizeof(double);  // in doubles
  static constexpr std::size_t distance = page / 2 + 64 / 8;  // of buffer 1 from 0, mod page
  static constexpr std::size_t slack = page + line / sizeof(double);

  std::size_t total_;
  std::unique_ptr<double[]> memory_;
  double* buffers_[2] = {};
};

}  // namespace stencil
