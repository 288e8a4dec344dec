// The detail:: entry points that start tasks (grain/detail/task.hpp): spawn onto the
// worker's own deque, run inline (sync launches, a waited-for sibling), fork, and the task
// ids they hand out. Separate from the loop: this is the producer's side, on the spawning
// task's stack; spawn is the hot path of every async.
#include <atomic>
#include <stdexcept>

#include "grain/clock.hpp"
#include "grain/detail/critical_tracking.hpp"
#include "phase_timing.hpp"
#include "scheduler.hpp"
#include "spawn_path.hpp"
#include "suspend.hpp"
#include "wake.hpp"

namespace grain::detail {

namespace {

void make_ready_action(void*, fiber* from) {
  scheduler::instance()->make_ready(from);
}

}  // namespace

void spawn_from_general(worker* w, task_base* t) {
  // --grain:critical=auto: a task without a pool goes where its kind was found to belong.
  if (critical_tracking_on() && t->pool < 0)
    t->pool = static_cast<std::int16_t>(critical_route(t->info.name));
  if (w != nullptr && (t->pool < 0 || static_cast<unsigned>(t->pool) == w->home->index)) {
#if GRAIN_TIMING
    if ((++w->spawn_counter & staged_wait_sample_mask) == 0) t->created_ns = now_ns();
#endif
    push_own(w, t);
    return;
  }
  scheduler* s = scheduler::instance();
  if (!s) throw_no_runtime();
  s->spawn_external(t);
}

void spawn(task_base* t) {
  spawn_from(current_worker(), t);
}

void spawn_new(task_base* t) {
  worker* w = current_worker();
  set_ids(w, t->info);
  spawn_from(w, t);
}

bool try_run_inline(task_base* t, state_base* s) {
  worker* w = current_worker();
  // The stack is as deep at every round of the loop: one look at the reserve is enough.
  if (!w || stack_too_deep_to_inline(w)) return false;
  // A parent that spawned several children and waits for the first one (skynet, UTS, any
  // "spawn all, then join in order") finds its younger children above it at the bottom of
  // its queue. It runs them first, as it would after the first one anyway, and stops once t
  // has run (false: t was stolen, or is not in this worker's queue).
  bool ran = false;
  run_children_inline(
      w, static_cast<int>(t->prio), t->info.parent_guid,
      [&](task_base* p) {
        if (p != t) return false;
        if (s) s->claim_for_sole_holder();
        ran = true;
        return true;
      },
      [&] { return !ran; });
  return ran;
}

void run_inline(task_base* t) {
  worker* w = current_worker();
  if (w)
    run_inline_on(w, t, false);
  else
    t->run();
}

void fork_run(task_base* t) {
  worker* w = current_worker();
  if (!w || !w->current_task) {
    run_inline(t);
    return;
  }
  // The child runs first on a fresh loop fiber; the parent waits in the pending queue, where
  // it is the next thing this worker resumes — unless another worker steals it first.
  t->pool = static_cast<std::int16_t>(w->home->index);
  w->run_next = t;
  suspend_current(w, make_ready_action, nullptr);
}

void mark_callable_end() noexcept {
#if GRAIN_TIMING
  if (worker* w = current_worker()) w->callable_end_ns = now_ns();
#endif
}

void assign_ids(task_info& info) noexcept {
  set_ids(current_worker(), info);
}

std::uint64_t current_guid() noexcept {
  worker* w = current_worker();
  return w && w->current_task ? w->current_task->info.guid : 0;
}

}  // namespace grain::detail
