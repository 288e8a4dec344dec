#pragma once
// A partition that changes its own grain while it runs (the mid-step split).
//
// A step's partitioning is fixed when the step is submitted, but a policy may move stencil.nx
// while the step runs: the decision that a coarse start is too coarse comes from the first
// step, and every coarse step that runs before it acts costs several good ones. So a partition
// task computes its points in pieces and reads the knob between them (one relaxed load per
// piece of ~16,000 points, a few microseconds of work); once the knob asks for partitions of
// at most half the points it has left, it runs the rest as a parallel loop whose chunks are
// the knob's size (grain::for_chunks with execution::knob_chunk_size): the chunks go to idle
// workers like partitions would, and a later move of the knob reaches the chunks not yet
// handed out. The partition's future, and with it the next step's dependencies, stay as they
// were: nothing else of the dataflow changes, and the result is the same bit for bit (every
// point is computed once, from the same neighbours).
//
// Partitions are not merged while they run: a fine partition's cost is its dataflow node and
// task, which exist once the step is submitted, so computing a not-yet-started neighbour's
// points in another task would save nothing. Coarser partitions come from the planning of the
// next step (solver.cpp), which before step 0 already knows the policy's answer to the
// initial condition (--settle-init).
#include <cstddef>

#include "grain/grain.hpp"
#include "grain/parallel/for_chunks.hpp"
#include "partition.hpp"

namespace stencil {

// Points per piece between two reads of the knob.
inline constexpr std::size_t elastic_piece = 16384;

// Points [b, e) of the next step (heat_range), splitting what is left when `k` (null: never)
// asks for partitions of at most half of it. Returns whether it split.
inline bool heat_range_elastic(const parameters& p, const double* in, double* out,
                               std::size_t total, std::size_t b, std::size_t e,
                               const grain::knob* k) {
  if (!k) {
    heat_range(p, in, out, total, b, e);
    return false;
  }
  std::size_t g = b;
  while (g < e) {
    const std::size_t left = e - g;
    const double want = k->value();
    if (want >= 1 && 2 * want <= static_cast<double>(left)) {
      namespace ex = grain::execution;
      grain::for_chunks(
          ex::par.with(ex::knob_chunk_size(*k)), g, e,
          [&](std::size_t cb, std::size_t ce) { heat_range(p, in, out, total, cb, ce); });
      return true;
    }
    const std::size_t stop = left > elastic_piece ? g + elastic_piece : e;
    heat_range(p, in, out, total, g, stop);
    g = stop;
  }
  return false;
}

}  // namespace stencil
