#pragma once
// Making work visible to a pool: the injection queue (work from outside the pool, and yields)
// and waking a sleeping worker. Separate from the loop's side (work_finding.hpp), which takes
// the work out again; notify_work is inline because every spawn calls it.
#include <atomic>

#include "scheduler.hpp"

namespace grain::detail {

void wake_one_sleeper(pool& p) noexcept;  // wake.cpp

inline void notify_work(pool& p) noexcept {
  // Pairs with the sleeper's increment of `sleepers` before its last look at the queues.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Out of line, so that a spawn's path has no call but this tail call.
  if (p.sleepers.load(std::memory_order_relaxed) > 0) wake_one_sleeper(p);
}

void inject_task(pool& p, task_base* t);
void inject_fiber(pool& p, fiber* f);

}  // namespace grain::detail
