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
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>

namespace stencil {

class generations {
 public:
  // Allocates without touching the memory: the first writes fault the pages in, and the
  // solver makes them parallel (solver::initial).
  explicit generations(std::size_t total) : total_(total) {
    for (auto& b : buffers_) b.reset(allocate(total));
  }

  std::size_t total() const noexcept { return total_; }
  // The points of the input of time step t (t = 0: the initial condition).
  double* of(std::size_t t) noexcept { return buffers_[t % 2].get(); }

  // Whether the pages of both arrays have been written once (by the first run).
  bool touched = false;

 private:
  static constexpr std::size_t huge_page = std::size_t(2) << 20;
  struct free_memory {
    void operator()(double* p) const noexcept { std::free(p); }
  };
  // Arrays of at least 2 MiB start on a huge page and ask for transparent huge pages (Linux
  // gives them to such regions in its default "madvise" mode): a 512th of the page faults when
  // the first run writes them, and of the TLB entries that the steps stream through. Measured
  // on 10,000,000 points and 2 workers: a first run 5-20 % faster than with 4 KiB pages (which
  // were slower than the recycled per-partition arrays before them); later runs the same
  // within the noise.
  static double* allocate(std::size_t n) {
    if (n > (std::numeric_limits<std::size_t>::max() - huge_page) / sizeof(double))
      throw std::bad_alloc();
    const std::size_t bytes = n * sizeof(double);
    const std::size_t align = bytes >= huge_page ? huge_page : 64;
    const std::size_t size = (bytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, size);
    if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (align == huge_page) ::madvise(p, size, MADV_HUGEPAGE);  // a hint; may be refused
#endif
    return static_cast<double*>(p);
  }

  std::size_t total_;
  std::unique_ptr<double, free_memory> buffers_[2];
};

}  // namespace stencil
