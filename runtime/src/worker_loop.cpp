// The worker loop every loop fiber runs: take work (work_finding.hpp), run a task or resume a
// user thread, wait when there is none (spin, yield, sleep; elastic deactivation), and the
// worker thread's start and end. Separate from the scheduler's construction and from where
// work comes from: this file is what a worker does with it.
#include <algorithm>
#include <chrono>
#include <thread>

#include "grain/clock.hpp"
#include "grain/detail/cpu_relax.hpp"
#include "hooks_internal.hpp"
#include "phase_timing.hpp"
#include "scheduler.hpp"
#include "stack_guard.hpp"
#include "wake.hpp"
#include "work_finding.hpp"

namespace grain::detail {

thread_local worker* tls_worker asm("grain_detail_tls_worker") = nullptr;

namespace {

constexpr unsigned spin_rounds = 64;
constexpr unsigned yield_rounds = 16;
// A busy worker runs its pool's background work (network progress) at least this often, so
// that messages move while every worker has tasks (Wagle 2019 §3.2: busy workers progress at a
// bounded period, idle ones all the time).
constexpr std::uint64_t busy_background_period_ns = 100'000;
// With background work, an idle worker keeps yielding for this long after the last thing it
// found (a sleep costs at least the timer slack, ~50 µs, on every message of a ping-pong),
// then sleeps in growing steps of at most background_max_sleep_ns instead of waiting for a
// wake-up: a message may arrive that only background work can see.
constexpr std::uint64_t background_yield_ns = 2'000'000;
constexpr std::uint64_t background_max_sleep_ns = 1'000'000;

void park_free_action(void*, fiber* from) {
  worker* w = current_worker();
  w->sched->fibers().put(w->free_fibers, from);
}

// A waiter's round (wait_by_polling_background): which entries run. `only` >= 0 runs that entry
// alone (the others' turn comes every few rounds); `moved` learns the last entry that did
// something.
struct waiter_round {
  int only = -1;
  int* moved = nullptr;
};

// `timed`: its time is added to the worker's background-work time here (a caller that times a
// whole loop of rounds itself passes false: two clock reads are 25 ns in a VM).
bool run_background(worker* w, bool timed = true, waiter_round round = {}) {
  pool& p = *w->home;
  if (p.background_count.load(std::memory_order_relaxed) == 0) return false;
  // Another worker running it is enough: waiting for the lock would block a worker.
  std::unique_lock lock(p.background_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  const std::uint64_t t0 = timed ? now_ns() : 0;
  bool did = false;
  int i = 0;
  for (auto& [id, fn] : p.background) {
    if (round.only < 0 || round.only == i) {
      const bool d = fn();
      if (d && round.moved) *round.moved = i;
      did = d || did;
    }
    ++i;
  }
  lock.unlock();
  if (timed) w->stats->background_ns.add(now_ns() - t0);
  return did;
}

// Between tasks of a busy worker: one relaxed load while the pool has no background work.
inline void maybe_run_background(worker* w) {
  if (w->home->background_count.load(std::memory_order_relaxed) == 0) return;
  const std::uint64_t now = now_ns();
  if (now < w->next_background_ns) return;
  w->next_background_ns = now + busy_background_period_ns;
  run_background(w);  // its time is loop time (Σt_func), and counted as background work
}

void run_task(worker* w, task_base* t, bool from_queue) {
  const task_info info = t->info;  // t may be gone once it ran
  w->current_task = t;
#if GRAIN_TIMING
  t->timed_phase = true;
#endif
  begin_phase(w, info, t->created_ns, w->stats->staged_wait_ns, w->stats->staged_wait_count);
  t->run();
  w = current_worker();  // the task may have suspended and resumed elsewhere
  w->current_task = nullptr;
  w->stats->tasks.inc();
  if (from_queue) w->finished_spawned.inc();
  end_phase(w, info, true, w->callable_end_ns);
}

void resume_fiber(worker* w, fiber* f) {
  w->current_task = f->task;
  begin_phase(w, f->task->info, f->ready_ns, w->stats->pending_wait_ns,
              w->stats->pending_wait_count);
  w->sched->suspended.fetch_sub(1, std::memory_order_relaxed);
  fiber* self = w->current;
  w->current = f;
  switch_record rec;
  rec.action = park_free_action;
  fiber_switch(self, f, rec);
  // Resumed as a free loop fiber: back to the loop.
}

void deactivate(worker* w) {
  pool& p = *w->home;
  // Its deques stay stealable, but a spawn onto a non-empty deque wakes nobody (spawn.cpp):
  // make sure someone awake knows the work is there before this worker stops taking it.
  if (pool_has_queued_work(*w->sched, p)) notify_work(p);
  std::uint64_t ts = now_ns();
  account_func(w, ts);
  w->stats->idle_ns.add(ts - w->stats->idle_since_ns.get());
  w->stats->idle_since_ns.set(0);
  for (;;) {
    std::uint32_t e = p.config_epoch.load(std::memory_order_acquire);
    if (w->index < p.active_target.load(std::memory_order_acquire) ||
        w->move_to.load(std::memory_order_acquire) != 0 ||
        w->sched->stopping().load(std::memory_order_acquire))
      break;
    p.config_epoch.wait(e, std::memory_order_acquire);
  }
  ts = now_ns();
  w->last_func_ns = ts;
  w->stats->idle_since_ns.set(ts);
}

// Look for work until some is found (true) or the runtime stops (false).
bool idle_wait(worker* w, task_base*& t, fiber*& f) {
  std::uint64_t idle_start = now_ns();
  account_func(w, idle_start);
  w->stats->idle_since_ns.set(idle_start);
  if (auto h = hook(&runtime_hooks::idle_begin)) h(w->id, idle_start);
  scheduler& s = *w->sched;
  bool found = false;
  std::uint64_t quiet_since = 0, sleep_step = 0;  // with background work: see below
  for (unsigned round = 0;; ++round) {
    if (s.stopping().load(std::memory_order_acquire)) break;
    if (w->move_to.load(std::memory_order_acquire) != 0) migrate(w);  // pool.<name>.share
    pool& p = *w->home;
    if (w->index >= p.active_target.load(std::memory_order_acquire)) {
      deactivate(w);
      idle_start = w->stats->idle_since_ns.get();
      round = 0;
      continue;
    }
    // With background work, the queues are looked at every other round and the network
    // every round: an idle worker's look at its queues (~375 instructions, three priorities
    // and the steals) costs most of what a progress round does (~530), and a lone message
    // waits half a round on average. The rounds that look are the odd ones: the first after one
    // that moved something (which sets round to 0, then the loop's ++) looks at once, for the task
    // a message may have brought; round 0 follows worker_loop's own look.
    const bool polling = p.background_count.load(std::memory_order_relaxed) != 0;
    if ((!polling || (round & 1) != 0) && find_work(w, t, f)) {
      found = true;
      break;
    }
    if (run_background(w)) {
      round = 0;
      sleep_step = 0;
      continue;
    }
    if (round < spin_rounds) {
      // With background work every round also polls the network, and a burst of PAUSEs
      // between polls delays each message by its length (32 PAUSEs are ~1.5 µs on recent x86
      // cores: with 32, the 8-byte round trip took 4.7 µs instead of 2.3).
      const int pauses = p.background_count.load(std::memory_order_relaxed) != 0 ? 1 : 32;
      for (int i = 0; i < pauses; ++i) cpu_relax();
      continue;
    }
    if (round < spin_rounds + yield_rounds) {
      std::this_thread::yield();
      continue;
    }
    if (p.background_count.load(std::memory_order_relaxed) != 0) {
      const std::uint64_t now = now_ns();
      if (round == spin_rounds + yield_rounds) quiet_since = now;
      if (now - quiet_since < background_yield_ns) {
        std::this_thread::yield();
        continue;
      }
      // Sleep in growing steps (the longer nothing arrives, the less it costs the others on
      // an oversubscribed machine), then look again, background work included.
      sleep_step =
          std::min<std::uint64_t>(sleep_step ? 2 * sleep_step : 50'000, background_max_sleep_ns);
      w->stats->sleeps.inc();
      std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_step));
      continue;
    }
    p.sleepers.fetch_add(1, std::memory_order_seq_cst);
    std::uint32_t e = p.work_epoch.load(std::memory_order_seq_cst);
    if (find_work(w, t, f)) {
      p.sleepers.fetch_sub(1, std::memory_order_relaxed);
      found = true;
      break;
    }
    if (!s.stopping().load(std::memory_order_acquire) &&
        w->index < p.active_target.load(std::memory_order_acquire) &&
        w->move_to.load(std::memory_order_acquire) == 0) {
      w->stats->sleeps.inc();
      p.work_epoch.wait(e, std::memory_order_acquire);
    }
    p.sleepers.fetch_sub(1, std::memory_order_relaxed);
    round = 0;
  }
  std::uint64_t ts = now_ns();
  w->stats->idle_ns.add(ts - idle_start);
  w->stats->idle_since_ns.set(0);
  account_func(w, ts);
  if (auto h = hook(&runtime_hooks::idle_end)) h(w->id, ts);
  // Chain wake-up: a woken worker that found work wakes the next sleeper if more is queued.
  pool& p = *w->home;
  if (found && p.sleepers.load(std::memory_order_relaxed) > 0 && pool_has_queued_work(s, p))
    notify_work(p);
  return found;
}

}  // namespace

bool wait_by_polling_background(bool (*ready)(const void*), const void* ctx) noexcept {
  worker* w = current_worker();
  // Not inside a direct action: its wait is refused at once (park).
  if (!w || g_no_wait || w->home->background_count.load(std::memory_order_relaxed) == 0)
    return false;
  // The whole wait counts as background work: it does nothing else between its rounds.
  const std::uint64_t start = now_ns();
  const std::uint64_t until = start + waiter_poll_ns;
  auto leave = [&](bool value_ready) {
    w->stats->background_ns.add(now_ns() - start);
    return value_ready;
  };
  // The entry that brought something last (the network layer this wait is for, most likely)
  // runs every round; the others every fourth: each one's idle round is an MPI test, and a
  // round half as long finds the value sooner.
  int focus = -1;
  for (unsigned i = 1;; ++i) {
    if (ready(ctx)) return leave(true);
    // Work this worker could take (its own, a victim's, the injection queue's) goes first.
    if (pool_has_queued_work(*w->sched, *w->home) || ((i & 15) == 0 && now_ns() > until))
      return leave(false);
    if (!run_background(w, false, {(i & 3) == 0 ? -1 : focus, &focus})) cpu_relax();
  }
}

void fiber_entry(bctx::transfer_t tr) {
  fiber_arrived(tr);
  worker_loop();
  // Shutdown: back to the worker's OS-thread context, never to return.
  worker* w = current_worker();
  fiber* self = w->current;
  w->current = &w->thread_fiber;
  switch_record rec;
  fiber_switch(self, &w->thread_fiber, rec);
  std::abort();  // unreachable
}

#if !GRAIN_HAS_FRESH_TLS_READER
GRAIN_NOINLINE worker* current_worker() noexcept {
  asm volatile("" ::: "memory");
  return tls_worker;
}
#endif

void worker_loop() {
  for (;;) {
    worker* w = current_worker();
    task_base* t = w->run_next;
    fiber* f = nullptr;
    if (t) {
      w->run_next = nullptr;
      run_task(w, t, false);
      continue;
    }
    if (w->move_to.load(std::memory_order_relaxed) != 0) migrate(w);  // pool.<name>.share
    maybe_run_background(w);
    // A worker above its pool's active count takes no new work (elastic pools).
    const bool active = w->index < w->home->active_target.load(std::memory_order_relaxed);
    if (!(active && find_work(w, t, f)) && !idle_wait(w, t, f)) return;
    if (t)
      run_task(w, t, true);
    else
      resume_fiber(w, f);
  }
}

void scheduler::worker_main(worker* w) {
  alt_signal_stack signal_stack;  // a stack overflow must be reported from another stack
  tls_worker = w;
  if (bind_) topo_.bind_this_thread(w->pu);
  fiber_init_thread(w->thread_fiber);
  if (auto h = hook(&runtime_hooks::worker_start)) h(w->id);
  w->last_func_ns = now_ns();
  fiber* first = fibers_.get(w->free_fibers, *w->stats);
  loop_fibers_.fetch_add(1, std::memory_order_relaxed);
  w->current = first;
  switch_record rec;
  fiber_switch(&w->thread_fiber, first, rec);
  // Shutdown.
  if (auto h = hook(&runtime_hooks::worker_stop)) h(w->id);
  tls_worker = nullptr;
}

}  // namespace grain::detail
