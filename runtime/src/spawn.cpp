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
#include "suspend.hpp"
#include "wake.hpp"

namespace grain::detail {

namespace {

constexpr unsigned staged_wait_sample_mask = 63;  // time 1 task in 64 from spawn to start

void make_ready_action(void*, fiber* from) {
  scheduler::instance()->make_ready(from);
}

// Returns the worker it ends on (t may suspend and this chain resume on another one), so the
// caller need not look it up again.
worker* run_inline_on(worker* w, task_base* t, bool from_queue) {
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

}  // namespace

namespace {

// A new task's identity: GUID (worker number in the high bits; 0xFFFFF outside workers) and
// the running task as parent.
void set_ids(worker* w, task_info& info) noexcept {
  if (w) {
    info.guid = (static_cast<std::uint64_t>(w->id + 1) << 40) | ++w->guid_counter;
    info.parent_guid = w->current_task ? w->current_task->info.guid : 0;
    return;
  }
  static std::atomic<std::uint64_t> external{0};
  info.guid = (0xFFFFFull << 40) | (external.fetch_add(1, std::memory_order_relaxed) + 1);
  info.parent_guid = 0;
}

inline void spawn_from(worker* w, task_base* t) {
  // --grain:critical=auto: a task without a pool goes where its kind was found to belong.
  if (GRAIN_UNLIKELY(critical_tracking_on()) && t->pool < 0)
    t->pool = static_cast<std::int16_t>(critical_route(t->info.name));
  if (GRAIN_LIKELY(w != nullptr) &&
      (t->pool < 0 || static_cast<unsigned>(t->pool) == w->home->index)) {
    t->pool = static_cast<std::int16_t>(w->home->index);
#if GRAIN_TIMING
    if ((++w->spawn_counter & staged_wait_sample_mask) == 0) t->created_ns = now_ns();
#endif
    w->spawned.inc();  // before the push: a thief may finish it at once
    // Only a push onto an empty deque wakes a sleeper. Anything older in the deque was there
    // when every sleeper last looked (it would have taken it instead of sleeping) or was
    // pushed by a spawn that checked, so a push onto it only adds to work someone was woken
    // for (and a woken worker that finds more wakes the next: idle_wait). The fence and the
    // sleeper check cost a locked instruction per spawn; skynet's, fib's and UTS's spawns go
    // almost all onto non-empty deques. Nothing in this deque is stranded: its owner runs it,
    // and a worker that stops taking work wakes a sleeper for it (worker_loop.cpp, deactivate).
    if (w->staged[static_cast<int>(t->prio)].push(t)) notify_work(*w->home);
    return;
  }
  scheduler* s = scheduler::instance();
  if (!s) throw_no_runtime();
  s->spawn_external(t);
}

}  // namespace

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
  if (!w) return false;
  const std::uint64_t parent = t->info.parent_guid;
  const int prio = static_cast<int>(t->prio);
  // A parent that spawned several children and waits for the first one (skynet, UTS, any
  // "spawn all, then join in order") finds its younger children above it at the bottom of
  // its queue. It runs them first, as it would after the first one anyway, and stops at the
  // first task that is not a sibling: it never runs unrelated work while it waits.
  for (;;) {
    // Running a task on this stack nests its frames on ours: keep a reserve, and suspend
    // instead when the stack is getting deep (a chain of 10,000 waits must not overflow).
    const char probe = 0;
    const fiber* f = w->current;
    if (f->stk.base && static_cast<std::size_t>(&probe - f->stk.base) < f->stk.size / 4 + 8192)
      return false;
    auto& q = w->staged[prio];
    task_base* p = q.pop();
    if (!p) return false;  // t was stolen, or is not in this worker's queue
    if (p == t) {
      if (s) s->claim_for_sole_holder();
      run_inline_on(w, t, true);
      return true;
    }
    if (parent == 0 || p->info.parent_guid != parent) {
      q.push(p);  // the owner may push back what it popped
      return false;
    }
    w = run_inline_on(w, p, true);  // p may have suspended, and this chain resumed elsewhere
  }
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
