#include "step_tracker.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>

namespace stencil {

step_tracker::step_tracker(std::size_t step, std::size_t partitions, std::size_t nx,
                           const step_tracker* previous, std::uint64_t start_ns,
                           const grain::counters::app_counter& iteration_time)
    : step_(step),
      partitions_(partitions),
      nx_(nx),
      previous_(previous),
      start_ns_(start_ns),
      iteration_time_(iteration_time),
      groups_((partitions + group_size - 1) / group_size),
      remaining_groups_(groups_.size()),
      done_future_(done_.get_future().share()) {
  for (std::size_t g = 0; g < groups_.size(); ++g)
    groups_[g].remaining.store(std::min(group_size, partitions - g * group_size),
                               std::memory_order_relaxed);
}

void step_tracker::arrive(std::size_t index) noexcept {
  // acq_rel on both levels: the last arrival sees every partition's work (and the previous
  // step's end, which one of them depended on).
  if (groups_[index / group_size].remaining.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
      remaining_groups_.fetch_sub(1, std::memory_order_acq_rel) == 1)
    finish();
}

void step_tracker::finish() noexcept {
  end_ns_ = grain::now_ns();
  // previous_->end_ns_ was written before the previous step's last partition was published,
  // and that partition is an input of one of ours: the read is ordered after the write.
  const std::uint64_t from = previous_ ? previous_->end_ns_ : start_ns_;
  duration_ns_ = end_ns_ - from;
  try {
    const auto d = static_cast<double>(duration_ns_);
    iteration_time_.sample(d);
    grain::event("iteration", {{"duration_ns", d},
                               {"step", static_cast<double>(step_)},
                               {"nx", static_cast<double>(nx_)},
                               {"partitions", static_cast<double>(partitions_)}});
  } catch (const std::exception& e) {
    // A listener failed; the computation is not affected, so say so and go on.
    std::fprintf(stderr, "grain-stencil: reporting step %zu failed: %s\n", step_, e.what());
  }
  done_.set_value();
}

}  // namespace stencil
