#pragma once
// Raw per-worker statistics. Each slot is written only by its own worker (plain relaxed
// load+store, no read-modify-write), read by anyone (the sampler) with relaxed loads.
// Definitions follow Grubel et al. 2015, section II-A (docs/counters.md, "Where the numbers come
// from"):
//   func_ns  = Σ t_func: time the worker spent in its scheduling loop (busy + idle)
//   exec_ns  = Σ t_exec: time spent executing task phases started by the loop
//   tasks    = n_t: tasks that terminated on this worker
//   phases   = task phases the loop started (a new task or a resumed suspended one)
// Tasks run inline inside another task (a waited-on child popped by future::get, sync and
// fork launches) count in `tasks` and `inline_tasks`; their time is inside the parent's phase.
#include <atomic>
#include <cstdint>

namespace grain {

// phase_since_ns while the worker adds an ending phase to its totals (no now_ns() is 1).
inline constexpr std::uint64_t phase_closing = 1;

struct stat_counter {
  std::atomic<std::uint64_t> v{0};
  void add(std::uint64_t d) noexcept {
    v.store(v.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  }
  void inc() noexcept { add(1); }
  void set(std::uint64_t x) noexcept { v.store(x, std::memory_order_relaxed); }
  std::uint64_t get() const noexcept { return v.load(std::memory_order_relaxed); }
};

struct alignas(64) worker_stats {
  stat_counter tasks;              // n_t
  stat_counter inline_tasks;       // of n_t, run inline (get-pop, sync, fork child, adaptive)
  stat_counter phases;             // n_ph
  stat_counter exec_ns;            // Σ t_exec over phases
  stat_counter func_ns;            // Σ t_func (updated at phase ends and idle transitions)
  stat_counter idle_ns;            // time in the idle/sleep path (part of func_ns - exec_ns)
  stat_counter background_ns;      // time in background work (network progress, timers)
  stat_counter pending_accesses;   // lookups in own pending queues
  stat_counter pending_misses;     // lookups in own pending queues that found nothing
  stat_counter staged_accesses;    // lookups in own staged queues
  stat_counter staged_misses;      // ... that found nothing
  stat_counter stolen_from;        // tasks other workers stole from this worker
  stat_counter stolen_to;          // tasks this worker stole from others
  stat_counter heavy_steals;       // steal attempts of this worker that paid a membarrier
  stat_counter staged_wait_ns;     // Σ (first run - creation) over staged tasks started
  stat_counter staged_wait_count;  // how many staged waits were measured
  stat_counter pending_wait_ns;    // Σ (resume - made ready) over resumed user threads
  stat_counter pending_wait_count;
  stat_counter suspensions;       // user-thread suspensions on this worker
  stat_counter stacks_allocated;  // stacks currently owned by this worker's stack pool
  stat_counter sleeps;            // times the worker went to sleep
  stat_counter idle_since_ns;     // now_ns() when the current idle period began, 0 if busy;
                                  // the sampler adds (now - idle_since) to func and idle
  // now_ns() when the task phase in progress began (0 outside loop-started phases): a reader
  // adds (now - phase_since) to exec and func, so a long task shows as busy while it runs.
  // Only the worker writes it, through phase_begun / phase_ending / phase_ended.
  stat_counter phase_since_ns;

  // At a phase begin, once func_ns holds the loop time up to `ts` (the phase start).
  void phase_begun(std::uint64_t ts) noexcept {
    phase_since_ns.v.store(ts, std::memory_order_release);
  }
  // Before reading the clock for the phase end, then folding the phase into exec_ns and
  // func_ns. A reader that sees phase_closing, or a phase_since that changed while it read the
  // totals, reads again: otherwise it could add (now - start) to totals that already hold the
  // phase. Marking before the clock read keeps a reader's (now - start) from outgrowing the
  // phase when the worker is preempted at its end. On x86 both fences cost nothing.
  void phase_ending() noexcept {
    phase_since_ns.v.store(phase_closing, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  // After exec_ns and func_ns hold the phase.
  void phase_ended() noexcept { phase_since_ns.v.store(0, std::memory_order_release); }
};

}  // namespace grain
