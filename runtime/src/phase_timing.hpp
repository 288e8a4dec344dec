#pragma once
// Phase timing: where a phase (a task run, or a user thread's stretch between suspensions)
// begins and ends, what that adds to Σt_exec and Σt_func (docs/counters.md), and the phase
// hooks. Separate because every path that starts or leaves a phase (the loop, suspension,
// fork, inline runs) must do exactly the same bookkeeping; inline because it is on the
// hot path of every task.
#include <cstdint>

#include "grain/clock.hpp"
#include "hooks_internal.hpp"
#include "scheduler.hpp"

namespace grain::detail {

// Fold the time since the last loop event into Σt_func.
inline void account_func(worker* w, std::uint64_t ts) noexcept {
#if GRAIN_TIMING
  w->stats->func_ns.add(ts - w->last_func_ns);
  w->last_func_ns = ts;
#else
  (void)w;
  (void)ts;
#endif
}

// The phase count and hook, timed or not; ts == 0: the hook gets a fresh stamp.
inline void notify_phase_begin(worker* w, const task_info& info, std::uint64_t ts) noexcept {
  w->stats->phases.inc();
  if (auto h = hook(&runtime_hooks::phase_begin)) h(w->id, info, ts ? ts : now_ns());
}

inline void notify_phase_end(worker* w, const task_info& info, bool finished,
                             std::uint64_t ts) noexcept {
  if (auto h = hook(&runtime_hooks::phase_end)) h(w->id, info, finished, ts ? ts : now_ns());
}

// A phase the loop starts (a new task or a resumed user thread): the loop's time up to here,
// how long what it starts waited in its queue (staged or pending), the phase count, the hook.
inline void begin_phase(worker* w, const task_info& info, std::uint64_t queued_ns,
                        stat_counter& wait_ns, stat_counter& wait_count) noexcept {
  std::uint64_t ts = 0;
#if GRAIN_TIMING
  ts = now_ns();
  account_func(w, ts);
  w->phase_start_ns = ts;
  w->stats->phase_begun(ts);
  if (queued_ns) {
    wait_ns.add(ts - queued_ns);
    wait_count.inc();
  }
#else
  (void)queued_ns;
  (void)wait_ns;
  (void)wait_count;
#endif
  notify_phase_begin(w, info, ts);
}

// The end of the phase begin_phase started. `callable_end_ns` is where a finished task's
// callable returned (mark_callable_end): publishing the result and waking its waiters count
// as the loop's time. 0, or a mark older than the phase (another task's), ends it now.
inline void end_phase(worker* w, const task_info& info, bool finished,
                      std::uint64_t callable_end_ns) noexcept {
  std::uint64_t ts = 0;
#if GRAIN_TIMING
  w->stats->phase_ending();
  ts = callable_end_ns;
  if (ts < w->phase_start_ns) ts = now_ns();
  w->stats->exec_ns.add(ts - w->phase_start_ns);
  account_func(w, ts);
  w->stats->phase_ended();
#else
  (void)callable_end_ns;
#endif
  notify_phase_end(w, info, finished, ts);
}

// A task run inline inside the running phase (sync launch, a waited-for sibling) is a phase
// for the counters and hooks, but not for the timing: its time already counts in the enclosing
// phase's Σt_exec, and restarting phase_start_ns would cut the enclosing phase short.
inline void begin_nested_phase(worker* w, const task_info& info) noexcept {
  notify_phase_begin(w, info, 0);
}

inline void end_nested_phase(worker* w, const task_info& info) noexcept {
  notify_phase_end(w, info, true, 0);
}

}  // namespace grain::detail
