// Where the /threads counters read from: the runtime's per-worker statistics (read_worker, a
// lock-free consistent read) and, for the preemption counters, the workers' OS threads
// (recorded when each worker starts).
#include <algorithm>
#include <chrono>
#include <thread>

#include "grain/clock.hpp"
#include "grain/detail/cpu_relax.hpp"
#include "grain/instrumentation/threads_counters.hpp"
#include "preemption.hpp"

namespace grain::instrumentation {
namespace {

// Made when the instrumentation is configured, before the workers start: its recorder sees
// every worker_start.
class runtime_source final : public stats_source, public detail::worker_threads {
 public:
  explicit runtime_source(runtime_core& rt) : rt_(rt), tids_(rt.num_workers()) {}
  unsigned locality() const override { return rt_.locality(); }
  unsigned num_workers() const override { return rt_.num_workers(); }
  const std::vector<pool_info>& pools() const override { return rt_.pools(); }
  const worker_stats& stats(unsigned w) const override { return rt_.stats(w); }
  std::size_t queue_length(unsigned w, queue_kind k) const override {
    return rt_.queue_length(w, k);
  }
  unsigned active_workers(unsigned pool) const override { return rt_.active_workers(pool); }
  pid_t os_thread(unsigned w) const override { return tids_.os_thread(w); }
  detail::sched_totals at_start(unsigned w) const override { return tids_.at_start(w); }

 private:
  runtime_core& rt_;
  detail::worker_tid_recorder tids_;
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
  // progress. After a few quick tries the worker was most likely preempted inside its phase
  // end: step aside so it can finish (a reading taken now is often a reset's base, and a base
  // without the closing phase would let the next interval count that phase on top of its own
  // length). If the marks still change after kGiveUpNs, give up on the periods in progress: an
  // under-count now, which the next reading makes up, never a phase counted twice.
  constexpr int kQuickTries = 64;
  constexpr std::uint64_t kGiveUpNs = 50'000'000;
  std::uint64_t phase = 0, idle = 0, give_up_at = 0;
  bool consistent = false;
  for (int tries = 0; !consistent; ++tries) {
    if (tries >= kQuickTries) {
      const std::uint64_t t = grain::now_ns();
      if (give_up_at == 0) give_up_at = t + kGiveUpNs;
      if (t > give_up_at) break;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
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

}  // namespace grain::instrumentation
