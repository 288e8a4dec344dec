#pragma once
// When a time step ends, and what is reported then.
//
// A step ends when the last of its partitions has been computed. Every partition task counts
// down the step's counters as it finishes; the task that brings it to zero takes the timestamp,
// and on that same worker, with no extra task or barrier, samples /app/iteration-time and
// raises the `iteration` event. Steps end in order (partition i of step t+1 needs partition i
// of step t), so the duration of step t is end(t) - end(t-1), with end(-1) the start of the
// run: the durations add up to the run time, also while steps overlap in the pipeline.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "grain/grain.hpp"

namespace stencil {

class step_tracker {
 public:
  // `previous` is the tracker of step - 1 (null for the first step, which then measures from
  // start_ns). The iteration counter must outlive the tracker.
  step_tracker(std::size_t step, std::size_t partitions, std::size_t nx,
               const step_tracker* previous, std::uint64_t start_ns,
               const grain::counters::app_counter& iteration_time);
  step_tracker(const step_tracker&) = delete;
  step_tracker& operator=(const step_tracker&) = delete;

  // Partition `index` of this step is done (or failed: it still counts, so the step ends and
  // the error reaches the caller through the partition's future).
  void arrive(std::size_t index) noexcept;

  // Ready when the step has ended. The tracker must stay alive until then and a little
  // beyond (the last arrive() is still returning): keep trackers until the run ends.
  grain::shared_future<void> done() const { return done_future_; }

  std::size_t step() const noexcept { return step_; }
  std::size_t nx() const noexcept { return nx_; }
  std::size_t partitions() const noexcept { return partitions_; }
  // Valid once done() is ready.
  std::uint64_t end_ns() const noexcept { return end_ns_; }
  std::uint64_t duration_ns() const noexcept { return duration_ns_; }

 private:
  void finish() noexcept;

  std::size_t step_, partitions_, nx_;
  const step_tracker* previous_;
  std::uint64_t start_ns_;
  const grain::counters::app_counter& iteration_time_;
  // Partitions count down in groups of consecutive indices, each on its own cache line, and
  // a finished group counts down the step: with 100,000 partitions per step one shared
  // counter would bounce between the workers' caches on every task.
  static constexpr std::size_t group_size = 256;
  struct alignas(64) group {
    std::atomic<std::size_t> remaining{0};
  };
  std::vector<group> groups_;
  std::atomic<std::size_t> remaining_groups_;
  std::uint64_t end_ns_ = 0, duration_ns_ = 0;
  grain::promise<void> done_;
  grain::shared_future<void> done_future_;
};

// Calls arrive() when the partition task leaves, whether it returns or throws.
struct arrive_on_exit {
  step_tracker* tracker;
  std::size_t index;
  ~arrive_on_exit() { tracker->arrive(index); }
};

}  // namespace stencil
