// Work entering a pool from outside a worker's own deques: injected tasks and user threads,
// made-ready user threads, and the wake-ups they need (wake.hpp).
#include "wake.hpp"

#include <mutex>

#include "grain/clock.hpp"
#include "grain/detail/critical_tracking.hpp"

namespace grain::detail {

void wake_one_sleeper(pool& p) noexcept {
  p.work_epoch.fetch_add(1, std::memory_order_release);
  p.work_epoch.notify_one();
}

void inject_task(pool& p, task_base* t) {
  {
    std::lock_guard lock(p.inject_mutex);
    p.inject_tasks[static_cast<int>(t->prio)].push_back(t);
    p.inject_count.fetch_add(1, std::memory_order_release);
  }
  notify_work(p);
}

void inject_fiber(pool& p, fiber* f) {
  {
    std::lock_guard lock(p.inject_mutex);
    p.inject_fibers[static_cast<int>(f->prio)].push_back(f);
    p.inject_count.fetch_add(1, std::memory_order_release);
  }
  notify_work(p);
}

void scheduler::spawn_external(task_base* t) {
  if (GRAIN_UNLIKELY(critical_tracking_on()) && t->pool < 0)
    t->pool = static_cast<std::int16_t>(critical_route(t->info.name));
  pool& p = t->pool < 0 ? default_pool() : *pools_.at(static_cast<unsigned>(t->pool));
  t->pool = static_cast<std::int16_t>(p.index);
#if GRAIN_TIMING
  // Tasks entering a pool from outside (another pool's worker, a non-worker thread) are few
  // next to the spawns a pool makes for itself: each is timed, so a pool fed only from
  // outside (Jiang et al. 2020's critical pool) has a staged wait time too.
  t->created_ns = now_ns();
#endif
  external_spawned_.fetch_add(1, std::memory_order_relaxed);
  inject_task(p, t);
}

void scheduler::make_ready(fiber* f) {
#if GRAIN_TIMING
  f->ready_ns = now_ns();
#endif
  worker* w = current_worker();
  if (w && w->home->index == static_cast<unsigned>(f->pool)) {
    w->pending[static_cast<int>(f->prio)].push(f);
    notify_work(*w->home);
  } else {
    inject_fiber(*pools_[static_cast<unsigned>(f->pool)], f);
  }
}

}  // namespace grain::detail
