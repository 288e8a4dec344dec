// Moving workers between pools while the program runs (pool.<name>.share, Jiang et al. 2020's open
// problem of tuning the split between the critical and the default pool online). Separate from
// the elastic worker count (pool.<name>.workers, which suspends workers): here a worker leaves
// one pool and serves another. The controller (a knob's setter) picks the workers and asks
// them; each worker moves itself at a point of its loop where it runs no task (migrate), so a
// task never changes pool while it runs and the worker's own queues are empty when it goes.
#include <stdexcept>
#include <string>

#include "scheduler.hpp"
#include "wake.hpp"

namespace grain::detail {

void migrate(worker* w) {
  const unsigned to = w->move_to.load(std::memory_order_acquire);
  if (to == 0) return;
  pool& from = *w->home;
  pool& dest = w->sched->pool_at(to - 1);
  // A newer request may arrive while this one is carried out: only this one is cleared.
  auto done = [w, to] {
    unsigned expected = to;
    w->move_to.compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
  };
  if (&dest == &from) {  // asked back before it left
    done();
    return;
  }
  // What is queued here belongs to the pool we leave: its other workers get it through their
  // injection queue. Only this worker pushes to its deques, so they stay empty once drained;
  // a thief that read our old pool_now and steals after the store below hands back what is
  // not its pool's (work_finding.hpp, stolen_from_other_pool).
  for (int prio = 0; prio < num_priorities; ++prio) {
    while (fiber* f = w->pending[prio].pop()) inject_fiber(from, f);
    while (task_base* t = w->staged[prio].pop()) inject_task(from, t);
  }
  w->home = &dest;
  // In its own pool a worker has its place in the elastic count; in another it is always active.
  w->index = &dest == w->origin ? w->origin_index : 0;
  w->pool_now.store(dest.index, std::memory_order_release);
  done();
  notify_work(dest);  // it may hold work this worker's arrival does not take at once
}

unsigned scheduler::pool_share(unsigned pool_idx) noexcept {
  std::lock_guard lock(share_mutex_);
  unsigned n = 0;
  for (auto& w : workers_) n += w->planned_pool == pool_idx ? 1 : 0;
  return n;
}

namespace {

// The worker to move from `src` to `dst`: one returning to its own pool first, else the
// source's own worker with the highest index — never its index 0, so every pool keeps one
// worker of its own (its counters keep seeing its tasks).
worker* pick(std::vector<std::unique_ptr<worker>>& workers, unsigned src, unsigned dst) {
  worker* best = nullptr;
  for (auto& w : workers) {
    if (w->planned_pool != src) continue;
    if (w->origin->index == dst) return w.get();
    if (w->origin->index == src && w->origin_index > 0 &&
        (!best || w->origin_index > best->origin_index))
      best = w.get();
  }
  return best;
}

}  // namespace

void scheduler::set_pool_share(unsigned pool_idx, unsigned n) {
  pool& p = *pools_.at(pool_idx);
  pool& d = default_pool();
  const auto own = static_cast<unsigned>(p.workers.size() + d.workers.size());
  if (&p == &d || n < 1 || n + 1 > own)
    throw std::out_of_range("grain: pool '" + p.name + "' can have 1.." + std::to_string(own - 1) +
                            " workers shared with 'default', not " + std::to_string(n));
  std::lock_guard lock(share_mutex_);
  for (;;) {
    unsigned now = 0;
    for (auto& w : workers_) now += w->planned_pool == p.index ? 1 : 0;
    if (now == n) break;
    const unsigned src = now < n ? d.index : p.index;
    const unsigned dst = now < n ? p.index : d.index;
    worker* w = pick(workers_, src, dst);
    if (!w) break;  // cannot happen within the range: each side keeps one of its own
    w->planned_pool = dst;
    w->move_to.store(dst + 1, std::memory_order_seq_cst);
    // It may sleep for work or as an inactive worker in either pool (a move in progress):
    // both wake on these epochs.
    for (pool* at : {pools_[src].get(), pools_[dst].get()}) {
      at->work_epoch.fetch_add(1, std::memory_order_seq_cst);
      at->work_epoch.notify_all();
      at->config_epoch.fetch_add(1, std::memory_order_seq_cst);
      at->config_epoch.notify_all();
    }
  }
}

}  // namespace grain::detail
