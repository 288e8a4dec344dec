#pragma once
// The /threads counters as data: each counter's name, unit, kind, formula and scopes, in the order
// of docs/counters.md. threads_counters.cpp computes them; only it includes this file.
#include <cstdint>

#include "grain/instrumentation/counters.hpp"

namespace grain::instrumentation::threads_table {

enum class formula : std::uint8_t {
  tasks,
  phases,
  t_d,
  t_o,
  t_func,
  t_phase,
  t_phase_overhead,
  exec,
  func,
  idle_rate,
  pending_accesses,
  pending_misses,
  staged_accesses,
  staged_misses,
  stolen_from,
  stolen_to,
  heavy_steals,
  wait_staged,
  wait_pending,
  wait_staged_sum,
  wait_staged_count,
  wait_pending_sum,
  wait_pending_count,
  background_time,
  background_overhead,
  network_overhead,
  idle_time,
  inline_tasks,
  suspensions,
  queue_staged,
  queue_pending,
  queue_total,
  active_workers,
  management_overhead,
  wait_inflation,
  wait_inflation_per_core,
  t_m,
  preempted,
  involuntary_switches,
  idle_rate_unpreempted,
  t_o_unpreempted,
  t_m_unpreempted,
  management_overhead_unpreempted,
};

enum scope : std::uint8_t { worker_scope = 1, pool_scope = 2, total_scope = 4, all_scopes = 7 };

struct metric {
  const char* name;
  const char* unit;
  counter_kind kind;
  formula f;
  std::uint8_t scopes;
  const char* description;
};

constexpr counter_kind mono = counter_kind::monotonic;
constexpr counter_kind avg = counter_kind::average;
constexpr counter_kind gauge = counter_kind::gauge;

// The order here is the order of docs/counters.md.
constexpr metric metrics[] = {
    {"count/cumulative", "count", mono, formula::tasks, all_scopes,
     "tasks completed, including tasks run inline (n_t)"},
    {"count/cumulative-phases", "count", mono, formula::phases, all_scopes,
     "task phases started by the scheduler loop (first runs and resumptions)"},
    {"count/inline-tasks", "count", mono, formula::inline_tasks, all_scopes,
     "tasks completed inline inside another task (get-pop, sync, fork, adaptive); part of n_t"},
    {"count/suspensions", "count", mono, formula::suspensions, all_scopes,
     "times a user thread suspended (waited on a future, LCO, yield or sleep)"},
    {"time/average", "ns", avg, formula::t_d, all_scopes,
     "average time a task spent executing, t_d = sum(t_exec)/n_t (docs/counters.md, Eq. 2)"},
    {"time/average-overhead", "ns", avg, formula::t_o, all_scopes,
     "average scheduler time spent per task outside its code, t_o = (sum(t_func)-sum(t_exec))/n_t "
     "(docs/counters.md, Eq. 3)"},
    {"time/average-func", "ns", avg, formula::t_func, all_scopes,
     "average time per task including its management, sum(t_func)/n_t = t_d + t_o "
     "(docs/counters.md, Eq. 3.1)"},
    {"time/average-phase", "ns", avg, formula::t_phase, all_scopes,
     "average time a task phase (a run between two suspensions) executed, sum(t_exec)/phases"},
    {"time/average-phase-overhead", "ns", avg, formula::t_phase_overhead, all_scopes,
     "average scheduler time per task phase, (sum(t_func)-sum(t_exec))/phases"},
    {"time/cumulative", "ns", mono, formula::exec, all_scopes,
     "total time workers spent executing task code, sum(t_exec)"},
    {"time/overall", "ns", mono, formula::func, all_scopes,
     "total time workers spent in the scheduling loop, busy and idle, sum(t_func)"},
    {"time/idle", "ns", mono, formula::idle_time, all_scopes,
     "total time workers spent looking for work without finding any; part of "
     "sum(t_func)-sum(t_exec)"},
    {"idle-rate", "ratio", avg, formula::idle_rate, all_scopes,
     "share of the scheduling loop's time not spent in task code, in [0,1]: "
     "I_r = (sum(t_func)-sum(t_exec))/sum(t_func) (docs/counters.md, Eq. 1)"},
    {"count/pending-accesses", "count", mono, formula::pending_accesses, all_scopes,
     "lookups in the worker's own pending (runnable user thread) queues"},
    {"count/pending-misses", "count", mono, formula::pending_misses, all_scopes,
     "lookups in the own pending queues that found nothing"},
    {"count/staged-accesses", "count", mono, formula::staged_accesses, all_scopes,
     "lookups in the worker's own staged (not yet started task) queues"},
    {"count/staged-misses", "count", mono, formula::staged_misses, all_scopes,
     "lookups in the own staged queues that found nothing"},
    {"count/stolen-from", "count", mono, formula::stolen_from, all_scopes,
     "tasks other workers stole from this worker's queues"},
    {"count/stolen-to", "count", mono, formula::stolen_to, all_scopes,
     "tasks this worker stole from other workers"},
    {"count/heavy-steals", "count", mono, formula::heavy_steals, all_scopes,
     "steal attempts of this worker that paid a membarrier (--grain:fences: every attempt on a "
     "non-empty queue when asymmetric, the first after a quiet stretch when adaptive, none when "
     "symmetric)"},
    {"wait-time/staged", "ns", avg, formula::wait_staged, all_scopes,
     "average time a task waited between creation and its first run"},
    {"wait-time/pending", "ns", avg, formula::wait_pending, all_scopes,
     "average time a user thread waited between becoming ready and resuming"},
    // The sums behind the two averages, so a policy can take the average over its own window
    // (Δsum / Δcount) instead of since the start (policies-lua/critical_pool.lua).
    {"wait-time/staged-sum", "ns", mono, formula::wait_staged_sum, all_scopes,
     "total time the measured tasks waited between creation and their first run"},
    {"wait-time/staged-count", "count", mono, formula::wait_staged_count, all_scopes,
     "tasks whose staged wait was measured"},
    {"wait-time/pending-sum", "ns", mono, formula::wait_pending_sum, all_scopes,
     "total time user threads waited between becoming ready and resuming"},
    {"wait-time/pending-count", "count", mono, formula::wait_pending_count, all_scopes,
     "resumptions whose pending wait was measured"},
    {"time/background-work", "ns", mono, formula::background_time, all_scopes,
     "time spent in background work (network progress, collectives)"},
    {"background-overhead", "ratio", avg, formula::background_overhead, all_scopes,
     "share of the scheduling loop's time spent in background work, in [0,1]: "
     "sum(t_background)/sum(t_func) (docs/counters.md, Eq. 3.4)"},
    {"network-overhead", "ratio", avg, formula::network_overhead, all_scopes,
     "share of the scheduling loop's time spent on network progress and collectives, in [0,1]: "
     "N_oh = sum(t_background)/sum(t_func) (docs/counters.md, Eq. 3.4)"},
    {"queue-length/staged", "count", gauge, formula::queue_staged, all_scopes,
     "tasks now in the staged queues"},
    {"queue-length/pending", "count", gauge, formula::queue_pending, all_scopes,
     "user threads now in the pending queues"},
    {"queue-length", "count", gauge, formula::queue_total, all_scopes,
     "tasks and user threads now waiting in this scope's queues (staged + pending)"},
    {"count/active-workers", "count", gauge, formula::active_workers, pool_scope | total_scope,
     "workers now active in the pool (its elastic size, the threads knob)"},
    {"management-overhead", "ns", avg, formula::management_overhead, all_scopes,
     "scheduler time outside task code per core, T_o = t_o*n_t/n_c (docs/counters.md, Eq. 4)"},
    {"wait-time-inflation", "ns", avg, formula::wait_inflation, all_scopes,
     "how much longer a task runs than on one worker (contention), t_w = t_d - t_d1 "
     "(docs/counters.md, Eq. 5; needs a calibration)"},
    {"wait-time-inflation-per-core", "ns", avg, formula::wait_inflation_per_core, all_scopes,
     "that inflation summed over tasks per core, T_w = (t_d - t_d1)*n_t/n_c "
     "(docs/counters.md, Eq. 6)"},
    {"time/average-management", "ns", avg, formula::t_m, all_scopes,
     "average scheduler time per task outside task code and idle search, "
     "t_m = (sum(t_func)-sum(t_exec)-sum(t_idle))/n_t (docs/counters.md, Eq. 3m)"},
    // Preemption (docs/counters.md, "Preemption"): the kernel's view of each worker's thread.
    {"time/preempted", "ns", mono, formula::preempted, all_scopes,
     "time the worker's thread was runnable but waiting for a CPU (Linux schedstat run delay, "
     "P)"},
    {"count/involuntary-switches", "count", mono, formula::involuntary_switches, all_scopes,
     "times the kernel took the CPU from the worker's thread (nonvoluntary_ctxt_switches)"},
    {"idle-rate-unpreempted", "ratio", avg, formula::idle_rate_unpreempted, all_scopes,
     "idle rate without preempted time, in [0,1]: "
     "max(0, sum(t_func)-sum(t_exec)-P)/(sum(t_func)-P) (docs/counters.md, Eq. 1p)"},
    {"time/average-overhead-unpreempted", "ns", avg, formula::t_o_unpreempted, all_scopes,
     "task overhead without preempted time, max(0, sum(t_func)-sum(t_exec)-P)/n_t "
     "(docs/counters.md, Eq. 3p)"},
    {"time/average-management-unpreempted", "ns", avg, formula::t_m_unpreempted, all_scopes,
     "t_m without preempted time, t_m * max(0, 1 - P/(sum(t_func)-sum(t_exec))) "
     "(docs/counters.md, Eq. 3mp)"},
    {"management-overhead-unpreempted", "ns", avg, formula::management_overhead_unpreempted,
     all_scopes,
     "T_o without preempted time, max(0, sum(t_func)-sum(t_exec)-P)/n_c "
     "(docs/counters.md, Eq. 4p)"},
};

constexpr bool needs_run_delay(formula f) noexcept {
  return f == formula::preempted || f == formula::idle_rate_unpreempted ||
         f == formula::t_o_unpreempted || f == formula::t_m_unpreempted ||
         f == formula::management_overhead_unpreempted;
}

}  // namespace grain::instrumentation::threads_table
