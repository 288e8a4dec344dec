// The /threads counters. Formulas and equation numbers: docs/counters.md, "/threads counters".
// The preemption counters and the formulas that exclude preempted time: docs/counters.md,
// "Preemption"; the kernel's figures come from preemption.cpp.
#include <algorithm>
#include <memory>

#include "grain/instrumentation/threads_counters.hpp"
#include "preemption.hpp"
#include "threads_metrics.hpp"

namespace grain::instrumentation {
namespace {

using namespace threads_table;

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
    // The preemption counters need the workers' OS threads; a source without them (a unit
    // test's fake) reports those counters unavailable.
    threads_ = dynamic_cast<const detail::worker_threads*>(&src);
    if (threads_) {
      reader_ = std::make_unique<detail::sched_reader>(threads_->task_dir(), nw);
      delay_why_ = reader_->delay_unavailable();
      switches_why_ = reader_->switches_unavailable();
    } else {
      delay_why_ = switches_why_ = "this statistics source has no OS threads to read";
    }
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
                          metrics[m].unit, describe(metrics[m]), metrics[m].kind});
      }
    base_.assign(nw, raw_totals{});
    sched_base_.assign(nw, detail::sched_totals{});
    sched_sampled_.assign(nw, detail::sched_totals{});
    sched_delta_.assign(instances_.size(), detail::sched_totals{});
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
      sched_base_ = sched_sampled_;
      return;
    }
    for (unsigned w = 0; w < base_.size(); ++w) {
      base_[w] = read(w, now);
      sched_base_[w] = read_sched(w);
    }
  }

  void sample(std::uint64_t now, counter_reading* out) override {
    sampled_at_ = now;
    // 1. One read of every worker's slots; pools and locality are sums of their workers.
    const std::size_t nw = base_.size();
    const std::size_t first_pool = nw;
    const std::size_t total = instances_.size() - 1;
    for (std::size_t i = first_pool; i < instances_.size(); ++i) {
      delta_[i] = raw_totals{};
      sched_delta_[i] = detail::sched_totals{.delay_ok = true, .switches_ok = true};
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
      // The kernel's side: one pread of schedstat and one of status per worker.
      sched_sampled_[w] = read_sched(static_cast<unsigned>(w));
      if (!sched_base_[w].delay_ok && !sched_base_[w].switches_ok && threads_)
        sched_base_[w] = threads_->at_start(static_cast<unsigned>(w));  // started since the reset
      sched_delta_[w] = detail::minus(sched_sampled_[w], sched_base_[w]);
      detail::accumulate(sched_delta_[p], sched_delta_[w]);
      detail::accumulate(sched_delta_[total], sched_delta_[w]);
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

  detail::sched_totals read_sched(unsigned w) noexcept {
    return reader_ ? reader_->read(w, threads_->os_thread(w)) : detail::sched_totals{};
  }

  // A counter the kernel cannot give here says why in its description (--grain:list-counters).
  std::string describe(const metric& m) const {
    const std::string& why = needs_run_delay(m.f)                   ? delay_why_
                             : m.f == formula::involuntary_switches ? switches_why_
                                                                    : no_reason_;
    return why.empty() ? m.description : m.description + std::string(" (unavailable: ") + why + ")";
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
      case formula::t_m:
      case formula::idle_rate_unpreempted:
      case formula::t_o_unpreempted:
      case formula::t_m_unpreempted:
      case formula::management_overhead_unpreempted:
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
    if (needs_run_delay(f)) return unpreempted(f, i);
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
      case formula::t_m:
        return ratio(static_cast<double>(sat_sub(sat_sub(d.func_ns, d.exec_ns), d.idle_ns)),
                     d.tasks);
      case formula::involuntary_switches:
        if (!sched_delta_[i].switches_ok) return {0, false};
        return count(sched_delta_[i].involuntary);
      case formula::preempted:  // computed by unpreempted() above
      case formula::idle_rate_unpreempted:
      case formula::t_o_unpreempted:
      case formula::t_m_unpreempted:
      case formula::management_overhead_unpreempted:
        break;
    }
    return {0, false};
  }

  // The formulas without preempted time P (docs/counters.md, Eq. 1p-4p): P is taken out of the
  // time outside task code (O = sum(t_func)-sum(t_exec)), the part a policy reads as overhead;
  // what of P exceeds O was spent inside tasks and leaves O' = 0.
  counter_reading unpreempted(formula f, std::uint32_t i) const noexcept {
    const detail::sched_totals& s = sched_delta_[i];
    if (!s.delay_ok) return {0, false};
    const raw_totals& d = delta_[i];
    const std::uint64_t p = s.run_delay_ns;
    const std::uint64_t o = sat_sub(d.func_ns, d.exec_ns);
    const double o_u = static_cast<double>(sat_sub(o, p));
    switch (f) {
      case formula::preempted:
        return count(p);
      case formula::idle_rate_unpreempted: {
        auto r = ratio(o_u, sat_sub(d.func_ns, p));
        r.value = std::clamp(r.value, 0.0, 1.0);
        return r;
      }
      case formula::t_o_unpreempted:
        return ratio(o_u, d.tasks);
      case formula::t_m_unpreempted: {
        // P leaves the idle search and the management in proportion to their shares of O.
        const double m = static_cast<double>(sat_sub(o, d.idle_ns));
        return ratio(o == 0 ? 0.0 : m * o_u / static_cast<double>(o), d.tasks);
      }
      case formula::management_overhead_unpreempted:
        return ratio(o_u, instances_[i].n_c);
      default:
        return {0, false};
    }
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
  // Preemption: the workers' threads, their kernel statistics, and why they may be missing.
  const detail::worker_threads* threads_ = nullptr;
  std::unique_ptr<detail::sched_reader> reader_;
  std::string delay_why_, switches_why_, no_reason_;
  std::vector<detail::sched_totals> sched_base_, sched_sampled_;  // per worker
  std::vector<detail::sched_totals> sched_delta_;                 // per instance
};

}  // namespace

std::shared_ptr<counter_provider> make_threads_provider(const stats_source& src,
                                                        threads_options opts) {
  return std::make_shared<threads_provider>(src, opts);
}

}  // namespace grain::instrumentation
