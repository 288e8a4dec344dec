#pragma once
// The futurized 1-D heat ring (HPX's 1d_stencil_4 with a partition size that may change
// between time steps).
//
// Every partition of every step is a shared_future of a view into the step's generation buffer
// (generations.hpp). Partition i of step t+1 is a dataflow on the partitions of step t that
// hold the points it reads — partitions i-1, i and i+1 (modulo the ring) — so a partition
// starts as soon as its inputs exist: there is no barrier between steps. A driver task submits
// the steps (a step's dataflows are created by tasks of --submit-chunk partitions each, so that
// creating 100,000 of them per step is not one worker's serial job); it keeps only a few steps
// in flight (options::window, then max_window), so that it reads the knob stencil.nx close to
// the computation instead of submitting every step up front. When the knob changed, the next
// step simply uses the new partitioning: partition i of it is a dataflow on the old partitions
// that overlap the points it reads. Nothing is copied or allocated, there is no global barrier,
// and the total stays fixed. A step that already runs follows a finer knob too: its partitions
// split the points they have left (elastic.hpp).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "generations.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"
#include "layout.hpp"
#include "options.hpp"
#include "partition.hpp"
#include "step_tracker.hpp"

namespace stencil {

using partition = grain::shared_future<partition_view>;
using space = std::vector<partition>;

struct run_result {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::vector<std::unique_ptr<step_tracker>> steps;  // one per time step, all ended
  space solution;                                    // the partitions after the last step
  std::shared_ptr<generations> memory;               // what `solution` points into
  layout final_layout;
  std::size_t repartitions = 0;
  std::size_t splits = 0;  // partitions that split what they had left while they ran
};

class solver {
 public:
  // nx_knob is read at step boundaries; `initial_nx` is where every run starts. `workers`
  // sizes the tasks that write the initial condition.
  solver(const options& o, grain::knob& nx_knob, std::size_t initial_nx, unsigned workers,
         const grain::counters::app_counter& iteration_time);

  // One run of o.nt steps. Call it from a task (it waits on futures). An exception thrown by a
  // partition task is rethrown here. The next run overwrites the points of this one.
  run_result run();

 private:
  layout initial_layout(const layout& first_step) const;
  space initial(const layout& l);
  // The initial condition when the policies should answer it before step 0 (--settle-init) and
  // it is written at the first step's grain: a probe of its first partitions as tasks, a
  // counter snapshot the policies handle, then the rest at the grain they chose. `l` becomes
  // the layout of the returned (ready) partitions.
  space initial_probed(layout& l);
  // Time step t on the partitions `current` (laid out as `from`), partitioned as `to`.
  space step(std::size_t t, const space& current, const layout& from, const layout& to,
             step_tracker* tracker) const;
  // --repartition-at (or --midstep-at): the NX given for `step`, 0 if none.
  static std::size_t scheduled_nx(const std::vector<std::pair<std::size_t, std::size_t>>& at,
                                  std::size_t step);

  const options& o_;
  grain::knob& nx_knob_;
  std::size_t initial_nx_;
  unsigned workers_;
  const grain::counters::app_counter& iteration_time_;
  std::shared_ptr<generations> memory_;
  mutable std::atomic<std::size_t> splits_{0};
};

}  // namespace stencil
