#pragma once
// A stats_source over plain worker_stats slots, for unit tests without a scheduler.
#include <memory>
#include <vector>

#include "grain/instrumentation/threads_counters.hpp"

namespace grain::test {

class fake_source final : public instrumentation::stats_source {
 public:
  // pools: name -> worker count; workers are numbered in pool order.
  explicit fake_source(std::vector<std::pair<std::string, unsigned>> pools) {
    unsigned w = 0;
    for (auto& [name, n] : pools) {
      pool_info p;
      p.name = name;
      for (unsigned i = 0; i < n; ++i) p.workers.push_back(w++);
      pools_.push_back(p);
      active.push_back(n);
    }
    slots = std::make_unique<worker_stats[]>(w);
    staged.assign(w, 0);
    pending.assign(w, 0);
    n_ = w;
  }
  unsigned num_workers() const override { return n_; }
  const std::vector<pool_info>& pools() const override { return pools_; }
  const worker_stats& stats_of(unsigned w) const { return slots[w]; }
  const worker_stats& stats(unsigned w) const override { return stats_of(w); }
  std::size_t queue_length(unsigned w, queue_kind k) const override {
    return k == queue_kind::staged ? staged[w] : pending[w];
  }
  unsigned active_workers(unsigned p) const override { return active[p]; }

  // Worker w ran `tasks` tasks of `exec_ns` each, with `overhead_ns` of loop time per task.
  void run(unsigned w, std::uint64_t tasks, std::uint64_t exec_ns, std::uint64_t overhead_ns) {
    slots[w].tasks.add(tasks);
    slots[w].phases.add(tasks);
    slots[w].exec_ns.add(tasks * exec_ns);
    slots[w].func_ns.add(tasks * (exec_ns + overhead_ns));
  }

  std::unique_ptr<worker_stats[]> slots;
  std::vector<std::size_t> staged, pending;
  std::vector<unsigned> active;

 private:
  std::vector<pool_info> pools_;
  unsigned n_ = 0;
};

}  // namespace grain::test
