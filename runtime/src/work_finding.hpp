#pragma once
// Where a worker looks for its next task or ready user thread, and in which order: its own
// deques, its pool's injection queue, its victims' (steal_order.hpp). The one file to change
// for another lookup order. Inline: find_work runs once per task in the worker loop.
#include <cstdint>
#include <mutex>

#include "scheduler.hpp"
#include "steal_order.hpp"

namespace grain::detail {

inline bool pop_injected(pool& p, int prio, task_base*& t, fiber*& f) {
  if (p.inject_count.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard lock(p.inject_mutex);
  if (!p.inject_fibers[prio].empty()) {
    f = p.inject_fibers[prio].front();
    p.inject_fibers[prio].pop_front();
  } else if (!p.inject_tasks[prio].empty()) {
    t = p.inject_tasks[prio].front();
    p.inject_tasks[prio].pop_front();
  } else {
    return false;
  }
  p.inject_count.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

inline bool pop_local(worker* w, int prio, task_base*& t, fiber*& f) {
  worker_stats& s = *w->stats;
  s.pending_accesses.inc();
  if ((f = w->pending[prio].pop())) return true;
  s.pending_misses.inc();
  s.staged_accesses.inc();
  if ((t = w->staged[prio].pop())) return true;
  s.staged_misses.inc();
  return false;
}

// Lookup order (docs/design/scheduler.md): own high, own normal (pending, then
// staged), the pool's injection queue, steal high/normal (same NUMA first), then low.
inline bool find_work(worker* w, task_base*& t, fiber*& f) {
  t = nullptr;
  f = nullptr;
  if (pop_local(w, 0, t, f) || pop_local(w, 1, t, f)) return true;
  pool& p = *w->home;
  if (pop_injected(p, 0, t, f) || pop_injected(p, 1, t, f)) return true;
  const steal_mode mode = w->sched->knobs().steal();
  if (steal(w, mode, 0, 1, t, f)) return true;
  if (pop_local(w, 2, t, f) || pop_injected(p, 2, t, f)) return true;
  return steal(w, mode, 2, 2, t, f);
}

// Whether anything is queued in the pool (the chain wake-up of sleeping workers): its
// injection queue and the deques of the workers serving it now.
inline bool pool_has_queued_work(scheduler& s, pool& p) noexcept {
  if (p.inject_count.load(std::memory_order_relaxed) > 0) return true;
  for (unsigned k = 0; k < s.num_workers(); ++k) {
    worker& v = s.worker_at(k);
    if (v.pool_now.load(std::memory_order_relaxed) != p.index) continue;
    for (int i = 0; i < num_priorities; ++i)
      if (!v.staged[i].empty() || !v.pending[i].empty()) return true;
  }
  return false;
}

}  // namespace grain::detail
