// The /threads counters. Formulas and equation numbers: docs/counters.md, "/threads counters".
#include <algorithm>

#include "grain/detail/cpu_relax.hpp"
#include "grain/instrumentation/threads_counters.hpp"

namespace grain::instrumentation {
namespace {

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
};

inline std::uint64_t sat_sub(std::uint64_t a, std::uint64_t b) noexcept {
  return a > b ? a - b : 0;
}

raw_totals minus(const raw_totals& a, const raw_totals& b) noexcept {
  raw_totals d;
  d.tasks = sat_sub(a.tasks, b.tasks);
  d.inline_tasks = sat_sub(a.inline_tasks, b.inline_tasks);
  d.phases = sat_sub(a.phases, b.phases);
  d.exec_ns = sat_sub(a.exec_ns, b.exec_ns);
  d.func_ns = sat_sub(a.func_ns, b.func_ns);
  d.idle_ns = sat_sub(a.idle_ns, b.idle_ns);
  d.background_ns = sat_sub(a.background_ns, b.background_ns);
  d.pending_accesses = sat_sub(a.pending_accesses, b.pending_accesses);
  d.pending_misses = sat_sub(a.pending_misses, b.pending_misses);
  d.staged_accesses = sat_sub(a.staged_accesses, b.staged_accesses);
  d.staged_misses = sat_sub(a.staged_misses, b.staged_misses);
  d.stolen_from = sat_sub(a.stolen_from, b.stolen_from);
  d.stolen_to = sat_sub(a.stolen_to, b.stolen_to);
  d.heavy_steals = sat_sub(a.heavy_steals, b.heavy_steals);
  d.staged_wait_ns = sat_sub(a.staged_wait_ns, b.staged_wait_ns);
  d.staged_wait_count = sat_sub(a.staged_wait_count, b.staged_wait_count);
  d.pending_wait_ns = sat_sub(a.pending_wait_ns, b.pending_wait_ns);
  d.pending_wait_count = sat_sub(a.pending_wait_count, b.pending_wait_count);
  d.suspensions = sat_sub(a.suspensions, b.suspensions);
  return d;
}

void accumulate(raw_totals& a, const raw_totals& b) noexcept {
  a.tasks += b.tasks;
  a.inline_tasks += b.inline_tasks;
  a.phases += b.phases;
  a.exec_ns += b.exec_ns;
  a.func_ns += b.func_ns;
  a.idle_ns += b.idle_ns;
  a.background_ns += b.background_ns;
  a.pending_accesses += b.pending_accesses;
  a.pending_misses += b.pending_misses;
  a.staged_accesses += b.staged_accesses;
  a.staged_misses += b.staged_misses;
  a.stolen_from += b.stolen_from;
  a.stolen_to += b.stolen_to;
  a.heavy_steals += b.heavy_steals;
  a.staged_wait_ns += b.staged_wait_ns;
  a.staged_wait_count += b.staged_wait_count;
  a.pending_wait_ns += b.pending_wait_ns;
  a.pending_wait_count += b.pending_wait_count;
  a.suspensions += b.suspensions;
}

inline counter_reading ratio(double num, std::uint64_t den) noexcept {
  if (den == 0) return {0, false};  // undefined over an empty interval
  return {num / static_cast<double>(den), true};
}

inline counter_reading count(std::uint64_t v) noexcept {
  return {static_cast<double>(v), true};
}

class threads_provider final : public counter_provider {
 public:
  threads_provider(const stats_source& src, threads_options opts) : src_(src), opts_(opts) {
    const unsigned nw = src.num_workers();
    const std::string loc = "locality#" + std::to_string(src.locality());
    // Instances: every worker, every pool, the locality.
    for (unsigned p = 0; p < src.pools().size(); ++p) {
      const auto& pool = src.pools()[p];
      for (unsigned w : pool.workers) {
        instances_.push_back(
            {worker_scope, w, p, 1, loc + "/pool#" + pool.name + "/worker#" + std::to_string(w)});
      }
    }
    std::sort(instances_.begin(), instances_.end(),
              [](const instance& a, const instance& b) { return a.index < b.index; });
    for (unsigned p = 0; p < src.pools().size(); ++p) {
      const auto& pool = src.pools()[p];
      instances_.push_back({pool_scope, p, p, static_cast<unsigned>(pool.workers.size()),
                            loc + "/pool#" + pool.name + "/total"});
    }
    instances_.push_back({total_scope, 0, 0, nw, loc + "/total"});

    for (std::uint32_t i = 0; i < instances_.size(); ++i)
      for (std::uint32_t m = 0; m < std::size(metrics); ++m) {
        if (!(metrics[m].scopes & instances_[i].scope)) continue;
        entries_.push_back({i, m});
        infos_.push_back({"/threads{" + instances_[i].name + "}/" + metrics[m].name,
                          metrics[m].unit, metrics[m].description, metrics[m].kind});
      }
    base_.assign(nw, raw_totals{});
    last_.assign(nw, raw_totals{});
    sampled_.assign(nw, raw_totals{});
    delta_.assign(instances_.size(), raw_totals{});
    queue_staged_.assign(instances_.size(), 0);
    queue_pending_.assign(instances_.size(), 0);
    active_.assign(instances_.size(), 0);
  }

  const std::vector<counter_info>& counters() const override { return infos_; }

  void reset(std::uint64_t now) override {
    // As of the last sample: start from its readings, so no task completed since is lost.
    if (now == sampled_at_) {
      base_ = sampled_;
      return;
    }
    for (unsigned w = 0; w < base_.size(); ++w) base_[w] = read(w, now);
  }

  void sample(std::uint64_t now, counter_reading* out) override {
    sampled_at_ = now;
    // 1. One read of every worker's slots; pools and locality are sums of their workers.
    const std::size_t nw = base_.size();
    const std::size_t first_pool = nw;
    const std::size_t total = instances_.size() - 1;
    for (std::size_t i = first_pool; i < instances_.size(); ++i) {
      delta_[i] = raw_totals{};
      queue_staged_[i] = queue_pending_[i] = 0;
    }
    for (std::size_t w = 0; w < nw; ++w) {
      sampled_[w] = read(static_cast<unsigned>(w), now);
      delta_[w] = minus(sampled_[w], base_[w]);
      queue_staged_[w] = src_.queue_length(static_cast<unsigned>(w), queue_kind::staged);
      queue_pending_[w] = src_.queue_length(static_cast<unsigned>(w), queue_kind::pending);
      const std::size_t p = first_pool + instances_[w].pool;
      accumulate(delta_[p], delta_[w]);
      accumulate(delta_[total], delta_[w]);
      queue_staged_[p] += queue_staged_[w];
      queue_pending_[p] += queue_pending_[w];
      queue_staged_[total] += queue_staged_[w];
      queue_pending_[total] += queue_pending_[w];
    }
    active_[total] = 0;
    for (std::size_t p = first_pool; p < total; ++p) {
      active_[p] = src_.active_workers(instances_[p].pool);
      active_[total] += active_[p];
    }
    // 2. Every counter from those sums: no allocation, no formatting.
    for (std::size_t k = 0; k < entries_.size(); ++k)
      out[k] = compute(metrics[entries_[k].metric].f, entries_[k].inst);
  }

 private:
  struct instance {
    std::uint8_t scope;
    unsigned index;  // worker id (worker scope), pool index (pool scope), 0 (total)
    unsigned pool;   // the pool of a worker; the pool itself for pool scope
    unsigned n_c;    // workers in the instance
    std::string name;
  };
  struct entry {
    std::uint32_t inst;
    std::uint32_t metric;
  };

  // A period in progress can come out a few ns longer than the worker then accounts it (its
  // clock read at the end is not ordered with the reader's), so a later reading could be a
  // little smaller: exec and func only grow, so keep the largest reading until the worker's
  // totals catch up. The worker marks a phase end before reading the clock, so the excess
  // kept here stays tiny even when the worker is preempted there. idle_ns is not held: the
  // idle end has no such mark, and a kept excess would last until the next idle period.
  raw_totals read(unsigned w, std::uint64_t now) noexcept {
    raw_totals r = read_worker(src_.stats(w), now);
    raw_totals& l = last_[w];
    l.exec_ns = r.exec_ns = std::max(r.exec_ns, l.exec_ns);
    l.func_ns = r.func_ns = std::max(r.func_ns, l.func_ns);
    return r;
  }

  // With the scheduler's timing compiled out (GRAIN_TIMING=0) Σt_exec and Σt_func stay 0:
  // every counter derived from them is unavailable rather than a false 0.
  static constexpr bool needs_timing(formula f) noexcept {
    switch (f) {
      case formula::t_d:
      case formula::t_o:
      case formula::t_func:
      case formula::t_phase:
      case formula::t_phase_overhead:
      case formula::exec:
      case formula::func:
      case formula::idle_rate:
      case formula::background_overhead:
      case formula::network_overhead:
      case formula::management_overhead:
      case formula::wait_inflation:
      case formula::wait_inflation_per_core:
        return true;
      default:
        return false;
    }
  }

  counter_reading compute(formula f, std::uint32_t i) const noexcept {
#if defined(GRAIN_TIMING) && !GRAIN_TIMING
    if (needs_timing(f)) return {0, false};
#endif
    const raw_totals& d = delta_[i];
    const double overhead = static_cast<double>(sat_sub(d.func_ns, d.exec_ns));
    switch (f) {
      case formula::tasks:
        return count(d.tasks);
      case formula::phases:
        return count(d.phases);
      case formula::inline_tasks:
        return count(d.inline_tasks);
      case formula::suspensions:
        return count(d.suspensions);
      case formula::t_d:
        return ratio(static_cast<double>(d.exec_ns), d.tasks);
      case formula::t_o:
        return ratio(overhead, d.tasks);
      case formula::t_func:
        return ratio(static_cast<double>(d.func_ns), d.tasks);
      case formula::t_phase:
        return ratio(static_cast<double>(d.exec_ns), d.phases);
      case formula::t_phase_overhead:
        return ratio(overhead, d.phases);
      case formula::exec:
        return count(d.exec_ns);
      case formula::func:
        return count(d.func_ns);
      case formula::idle_time:
        return count(d.idle_ns);
      case formula::idle_rate: {
        auto r = ratio(overhead, d.func_ns);
        r.value = std::clamp(r.value, 0.0, 1.0);
        return r;
      }
      case formula::pending_accesses:
        return count(d.pending_accesses);
      case formula::pending_misses:
        return count(d.pending_misses);
      case formula::staged_accesses:
        return count(d.staged_accesses);
      case formula::staged_misses:
        return count(d.staged_misses);
      case formula::stolen_from:
        return count(d.stolen_from);
      case formula::stolen_to:
        return count(d.stolen_to);
      case formula::heavy_steals:
        return count(d.heavy_steals);
      case formula::wait_staged:
        return ratio(static_cast<double>(d.staged_wait_ns), d.staged_wait_count);
      case formula::wait_pending:
        return ratio(static_cast<double>(d.pending_wait_ns), d.pending_wait_count);
      case formula::wait_staged_sum:
        return count(d.staged_wait_ns);
      case formula::wait_staged_count:
        return count(d.staged_wait_count);
      case formula::wait_pending_sum:
        return count(d.pending_wait_ns);
      case formula::wait_pending_count:
        return count(d.pending_wait_count);
      case formula::background_time:
        return count(d.background_ns);
      case formula::background_overhead:
      case formula::network_overhead: {
        auto r = ratio(static_cast<double>(d.background_ns), d.func_ns);
        r.value = std::clamp(r.value, 0.0, 1.0);
        return r;
      }
      case formula::queue_staged:
        return count(queue_staged_[i]);
      case formula::queue_pending:
        return count(queue_pending_[i]);
      case formula::queue_total:
        return count(queue_staged_[i] + queue_pending_[i]);
      case formula::active_workers:
        return count(active_[i]);
      case formula::management_overhead:
        return ratio(overhead, instances_[i].n_c);
      case formula::wait_inflation: {
        if (!opts_.t_d1_ns || d.tasks == 0) return {0, false};
        return {static_cast<double>(d.exec_ns) / static_cast<double>(d.tasks) - *opts_.t_d1_ns,
                true};
      }
      case formula::wait_inflation_per_core: {
        if (!opts_.t_d1_ns || d.tasks == 0 || instances_[i].n_c == 0) return {0, false};
        const double t_w =
            static_cast<double>(d.exec_ns) / static_cast<double>(d.tasks) - *opts_.t_d1_ns;
        return {t_w * static_cast<double>(d.tasks) / instances_[i].n_c, true};
      }
    }
    return {0, false};
  }

  const stats_source& src_;
  threads_options opts_;
  std::vector<instance> instances_;  // workers (by id), pools, locality total
  std::vector<entry> entries_;
  std::vector<counter_info> infos_;
  std::vector<raw_totals> base_;     // per worker, at the last reset
  std::vector<raw_totals> last_;     // per worker, the largest exec and func read so far
  std::vector<raw_totals> sampled_;  // per worker, read by the last sample()
  std::uint64_t sampled_at_ = 0;     // its `now`
  std::vector<raw_totals> delta_;    // per instance, this sample
  std::vector<std::uint64_t> queue_staged_, queue_pending_, active_;
};

class runtime_source final : public stats_source {
 public:
  explicit runtime_source(runtime_core& rt) : rt_(rt) {}
  unsigned locality() const override { return rt_.locality(); }
  unsigned num_workers() const override { return rt_.num_workers(); }
  const std::vector<pool_info>& pools() const override { return rt_.pools(); }
  const worker_stats& stats(unsigned w) const override { return rt_.stats(w); }
  std::size_t queue_length(unsigned w, queue_kind k) const override {
    return rt_.queue_length(w, k);
  }
  unsigned active_workers(unsigned pool) const override { return rt_.active_workers(pool); }

 private:
  runtime_core& rt_;
};

}  // namespace

raw_totals read_worker(const worker_stats& s, std::uint64_t now) noexcept {
  raw_totals r;
  r.tasks = s.tasks.get();
  r.inline_tasks = s.inline_tasks.get();
  r.phases = s.phases.get();
  // exec/func/idle change together with phase_since and idle_since at phase ends and idle
  // transitions; the worker takes no lock, so read the totals between two equal readings of
  // both marks (a seqlock read, see worker_stats::phase_ending) and add the periods in
  // progress. If the worker keeps changing them, give up on the periods in progress: an
  // under-count now, which the next reading makes up, never a phase counted twice.
  std::uint64_t phase = 0, idle = 0;
  bool consistent = false;
  for (int tries = 0; tries < 64 && !consistent; ++tries) {
    phase = s.phase_since_ns.v.load(std::memory_order_acquire);
    if (phase == phase_closing) {
      grain::detail::cpu_relax();
      continue;
    }
    idle = s.idle_since_ns.get();
    r.exec_ns = s.exec_ns.get();
    r.func_ns = s.func_ns.get();
    r.idle_ns = s.idle_ns.get();
    const std::uint64_t idle_again = s.idle_since_ns.get();
    std::atomic_thread_fence(std::memory_order_acquire);
    consistent = s.phase_since_ns.v.load(std::memory_order_relaxed) == phase && idle_again == idle;
  }
  if (!consistent) {
    phase = idle = 0;
    r.exec_ns = s.exec_ns.get();
    r.func_ns = s.func_ns.get();
    r.idle_ns = s.idle_ns.get();
    r.exec_ns = std::min(r.exec_ns, r.func_ns);  // a phase folded into one but not yet the other
  }
  if (phase != 0 && now > phase) {
    r.exec_ns += now - phase;
    r.func_ns += now - phase;
  }
  if (idle != 0 && now > idle) {
    r.func_ns += now - idle;
    r.idle_ns += now - idle;
  }
  r.background_ns = s.background_ns.get();
  r.pending_accesses = s.pending_accesses.get();
  r.pending_misses = s.pending_misses.get();
  r.staged_accesses = s.staged_accesses.get();
  r.staged_misses = s.staged_misses.get();
  r.stolen_from = s.stolen_from.get();
  r.stolen_to = s.stolen_to.get();
  r.heavy_steals = s.heavy_steals.get();
  r.staged_wait_ns = s.staged_wait_ns.get();
  r.staged_wait_count = s.staged_wait_count.get();
  r.pending_wait_ns = s.pending_wait_ns.get();
  r.pending_wait_count = s.pending_wait_count.get();
  r.suspensions = s.suspensions.get();
  return r;
}

std::unique_ptr<stats_source> make_stats_source(runtime_core& rt) {
  return std::make_unique<runtime_source>(rt);
}

std::shared_ptr<counter_provider> make_threads_provider(const stats_source& src,
                                                        threads_options opts) {
  return std::make_shared<threads_provider>(src, opts);
}

}  // namespace grain::instrumentation
