#pragma once
// The producer's side of a task, shared by every way of starting one (spawn.cpp: async and
// the waits that run a sibling inline; task_group.cpp): its identity, the push onto the
// worker's own deque, and running a task inline on the caller's stack. Inline because this is
// the hot path of every spawn and every inline join.
#include <atomic>
#include <cstdint>

#include "grain/clock.hpp"
#include "grain/detail/critical_tracking.hpp"
#include "phase_timing.hpp"
#include "scheduler.hpp"
#include "wake.hpp"

namespace grain::detail {

inline constexpr unsigned staged_wait_sample_mask = 63;  // time 1 task in 64 from spawn to start

// A new task's identity: GUID (worker number in the high bits; 0xFFFFF outside workers) and
// the running task as parent.
inline void set_ids(worker* w, task_info& info) noexcept {
  if (w) {
    info.guid = (static_cast<std::uint64_t>(w->id + 1) << 40) | ++w->guid_counter;
    info.parent_guid = w->current_task ? w->current_task->info.guid : 0;
    return;
  }
  static std::atomic<std::uint64_t> external{0};
  info.guid = (0xFFFFFull << 40) | (external.fetch_add(1, std::memory_order_relaxed) + 1);
  info.parent_guid = 0;
}

// t onto w's own deque, w a worker of t's pool.
inline void push_own(worker* w, task_base* t) {
  t->pool = static_cast<std::int16_t>(w->home->index);
  w->spawned.inc();  // before the push: a thief may finish it at once
  // Only a push onto an empty deque wakes a sleeper. Anything older in the deque was there
  // when every sleeper last looked (it would have taken it instead of sleeping) or was
  // pushed by a spawn that checked, so a push onto it only adds to work someone was woken
  // for (and a woken worker that finds more wakes the next: idle_wait). The fence and the
  // sleeper check cost a locked instruction per spawn; skynet's, fib's and UTS's spawns go
  // almost all onto non-empty deques. Nothing in this deque is stranded: its owner runs it,
  // and a worker that stops taking work wakes a sleeper for it (worker_loop.cpp, deactivate).
  if (w->staged[static_cast<int>(t->prio)].push(t)) notify_work(*w->home);
}

// spawn_from's other cases (no worker, another pool, routing by kind, a timed sample): spawn.cpp.
void spawn_from_general(worker* w, task_base* t);

// The next spawn on w is the one in 64 whose wait until it starts is timed.
inline bool spawn_is_timed_sample(const worker* w) noexcept {
#if GRAIN_TIMING
  return ((w->spawn_counter + 1) & staged_wait_sample_mask) == 0;
#else
  (void)w;
  return false;
#endif
}

// Queue t (w: the calling worker or nullptr). The common case — a worker of the task's pool,
// no routing by kind, not the one spawn in 64 whose wait is timed — is written so that its
// only call is the last one: the spawn needs no stack frame, which was a tenth of its
// instructions.
inline void spawn_from(worker* w, task_base* t) {
  if (GRAIN_UNLIKELY(w == nullptr || critical_tracking_on() ||
                     (t->pool >= 0 && static_cast<unsigned>(t->pool) != w->home->index) ||
                     spawn_is_timed_sample(w)))
    return spawn_from_general(w, t);
#if GRAIN_TIMING
  ++w->spawn_counter;
#endif
  push_own(w, t);
}

// Runs t on this stack as a nested phase. Returns the worker it ends on (t may suspend and
// this chain resume on another one), so the caller need not look it up again. t may be gone
// when it returns: only its copied identity is used afterwards.
GRAIN_ALWAYS_INLINE worker* run_inline_on(worker* w, task_base* t, bool from_queue) {
  const task_info info = t->info;
  task_base* saved = w->current_task;
  w->current_task = t;
  begin_nested_phase(w, info);
  t->run();
  w = current_worker();
  w->current_task = saved;
  w->stats->tasks.inc();
  w->stats->inline_tasks.inc();
  if (from_queue) w->finished_spawned.inc();
  end_nested_phase(w, info);
  return w;
}

// A task waiting for its children runs them from the bottom of its worker's queue at `prio`
// while `more()`: each popped task `take(p)` accepts (after preparing it), or any other child of
// `parent` (0: none). It stops at the first task that is neither, which goes back: a waiting
// task never runs unrelated work on its stack. Used by future::get (try_run_inline) and
// task_group::wait. Returns the worker it ends on (a child may suspend and this chain resume on
// another one).
template <class Take, class More>
inline worker* run_children_inline(worker* w, int prio, std::uint64_t parent, Take take,
                                   More more) {
  while (more()) {
    auto& q = w->staged[prio];
    task_base* p = q.pop();
    if (!p) break;
    if (!take(p) && (parent == 0 || p->info.parent_guid != parent)) {
      q.push(p);  // the owner may push back what it popped
      break;
    }
    w = run_inline_on(w, p, true);
  }
  return w;
}

// Running a task on this stack nests its frames on ours: an inline join keeps this reserve,
// and suspends instead when the stack is getting deep (a chain of 10,000 waits must not
// overflow).
inline bool stack_too_deep_to_inline(const worker* w) noexcept {
  const char probe = 0;
  const fiber* f = w->current;
  return f->stk.base && static_cast<std::size_t>(&probe - f->stk.base) < f->stk.size / 4 + 8192;
}

}  // namespace grain::detail
