#pragma once
// Where a worker looks for its next task or ready user thread, and in which order: its own
// deques, its pool's injection queue, its victims'. The one file to change for another lookup
// or steal order. Inline: find_work runs once per task in the worker loop.
#include <cstdint>
#include <mutex>

#include "scheduler.hpp"
#include "wake.hpp"

namespace grain::detail {

inline std::uint64_t xorshift(std::uint64_t& s) noexcept {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

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

// A victim that moved to this worker's pool just before we read pool_now may still hold work of
// its old pool (and the other way round): such work goes to its own pool's injection queue.
inline bool stolen_from_other_pool(worker* w, task_base* t, fiber* f) {
  const unsigned mine = w->home->index;
  const auto theirs = static_cast<unsigned>(t ? t->pool : f->pool);
  if (theirs == mine) return false;
  if (t)
    inject_task(w->sched->pool_at(theirs), t);
  else
    inject_fiber(w->sched->pool_at(theirs), f);
  return true;
}

inline bool steal(worker* w, int prio_lo, int prio_hi, task_base*& t, fiber*& f) {
  const auto n = w->victims.size();
  if (n == 0) return false;
  const unsigned mine = w->home->index;
  // Random start inside the near (same NUMA) group would need its size; a random rotation of
  // the whole list keeps near victims first in expectation and costs nothing.
  std::size_t start = xorshift(w->rng) % n;
  for (int prio = prio_lo; prio <= prio_hi; ++prio) {
    for (std::size_t k = 0; k < n; ++k) {
      worker* v = w->victims[(start + k) % n];
      if (v->pool_now.load(std::memory_order_acquire) != mine)
        continue;  // stealing stays in a pool
      std::uint64_t membarriers = 0;
      const bool got =
          (f = v->pending[prio].steal(&membarriers)) || (t = v->staged[prio].steal(&membarriers));
      if (GRAIN_UNLIKELY(membarriers != 0)) w->stats->heavy_steals.add(membarriers);
      if (got) {
        if (stolen_from_other_pool(w, t, f)) {
          t = nullptr;
          f = nullptr;
          continue;
        }
        w->stats->stolen_to.inc();
        v->stats->stolen_from.v.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    }
  }
  return false;
}

// Lookup order (docs/architecture.md, "Scheduler"): own high, own normal (pending, then
// staged), the pool's injection queue, steal high/normal (same NUMA first), then low.
inline bool find_work(worker* w, task_base*& t, fiber*& f) {
  t = nullptr;
  f = nullptr;
  if (pop_local(w, 0, t, f) || pop_local(w, 1, t, f)) return true;
  pool& p = *w->home;
  if (pop_injected(p, 0, t, f) || pop_injected(p, 1, t, f)) return true;
  const bool can_steal = w->sched->knobs().steal_enabled();
  if (can_steal && steal(w, 0, 1, t, f)) return true;
  if (pop_local(w, 2, t, f) || pop_injected(p, 2, t, f)) return true;
  return can_steal && steal(w, 2, 2, t, f);
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
