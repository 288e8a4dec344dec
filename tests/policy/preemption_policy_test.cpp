// The shipped policies leave preempted time out (docs/counters.md, "Preemption", Eq. 1p and
// 3mp): fed counters where workers waited for a CPU, adaptive_grain.lua and throttle.lua decide
// as on a quiet machine when /threads/time/preempted is there, and as before (reading the wait as
// overhead or idleness) when it is not.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "grain/clock.hpp"
#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace {

using grain::policy::engine;
namespace inst = grain::instrumentation;

// Monotonic /threads totals of one instance, fed as snapshots; `preempted` < 0: not fed (a
// kernel without run delays).
class feed {
 public:
  feed(engine& e, std::string instance) : e_(e), p_("/threads{" + std::move(instance) + "}/") {}

  void window(double tasks, double exec_ns, double outside_ns, double idle_ns, double preempted) {
    tasks_ += tasks;
    exec_ += exec_ns;
    func_ += exec_ns + outside_ns;
    idle_ += idle_ns;
    pre_ += std::max(0.0, preempted);
    inst::counter_snapshot snap;
    snap.time_ns = grain::now_ns();
    snap.sequence = seq_++;
    snap.layout_generation = preempted < 0 ? 8001 : 8002;
    std::vector<std::pair<std::string, double>> v{{p_ + "count/cumulative", tasks_},
                                                  {p_ + "time/cumulative", exec_},
                                                  {p_ + "time/idle", idle_},
                                                  {p_ + "time/overall", func_}};
    if (preempted >= 0) v.push_back({p_ + "time/preempted", pre_});
    for (auto& [n, x] : v) snap.values.push_back({n, x, true, inst::counter_kind::monotonic});
    std::sort(snap.values.begin(), snap.values.end(),
              [](auto& a, auto& b) { return a.name < b.name; });
    e_.feed_sample(snap);
  }

  void step(double nx, double duration_ns) {
    inst::app_event ev;
    ev.time_ns = grain::now_ns();
    ev.name = "iteration";
    ev.payload = {{"step", static_cast<double>(step_++)}, {"nx", nx}, {"duration_ns", duration_ns}};
    e_.feed_event(ev);
  }

 private:
  engine& e_;
  std::string p_;
  double tasks_ = 0, exec_ = 0, func_ = 0, idle_ = 0, pre_ = 0;
  std::uint64_t seq_ = 1;
  int step_ = 0;
};

std::size_t decisions_on(const std::string& knob, std::size_t from) {
  std::size_t n = 0;
  auto all = grain::knobs().decisions();
  for (std::size_t i = from; i < all.size(); ++i) n += all[i].knob == knob;
  return n;
}

// Tasks of 100 µs with 1.6 µs of management each, on workers that also waited 1.4 µs per task
// for a CPU outside task code. Read as management, t_m = 3 µs and 100 t_m > 2 t_d: coarsen.
// Without the wait (Eq. 3mp), t_m = 1.6 µs and the grain is in the efficient region: hold.
std::size_t adaptive_grain_moves(const std::string& knob_name, double preempted_per_task) {
  grain::knob& k = grain::knobs().define_int(knob_name, 10, 10'000'000, 100'000, "nx");
  const auto from = grain::knobs().decisions().size();
  engine e;
  e.load_string("AG = require('adaptive_grain')\nAG.start{ knob = '" + knob_name + "' }\n",
                "start.lua");
  feed f(e, "locality#0/total");
  for (int i = 0; i < 4; ++i) {
    const double n = 1000;
    f.window(n, n * 100e3, n * 3e3, 0, preempted_per_task < 0 ? -1 : n * preempted_per_task);
    f.step(static_cast<double>(k.int_value()), 60e6);
    e.pump();
  }
  return decisions_on(knob_name, from);
}

TEST(PreemptionPolicies, AdaptiveGrainDoesNotCoarsenOnPreemptedTime) {
  EXPECT_EQ(adaptive_grain_moves("test.pp.grain.known", 1.4e3), 0u)
      << "the wait for a CPU is not management: the grain is efficient";
  EXPECT_GE(adaptive_grain_moves("test.pp.grain.unknown", -1), 1u)
      << "without time/preempted the policy reads the wait as management, as before";
  // A wait longer than half the time outside tasks (preempted_share) leaves too little to
  // judge management by: the plain t_m, as without the counter.
  EXPECT_GE(adaptive_grain_moves("test.pp.grain.most", 2.9e3), 1u)
      << "a window that is mostly wait does not count for t_m";
}

// A pool of 4 whose workers spend 100 ms of each 400 ms in tasks and 250 ms of the search for
// work waiting for a CPU (another process has it): idle rate 0.75 read plainly (0.63 from the
// search time), 50/150 = 0.33 without the wait (0 from the search time less the wait) — not
// above throttle's `high` (0.5), so the pool keeps its workers.
std::size_t throttle_moves(const std::string& pool, bool preempted_known) {
  grain::knob& k = grain::knobs().define_int("pool." + pool + ".workers", 1, 4, 4, "workers");
  const auto from = grain::knobs().decisions().size();
  engine e;
  e.load_string("require('throttle').start{ pool = '" + pool + "', patience = 2 }\n", "start.lua");
  feed f(e, "locality#0/pool#" + pool + "/total");
  for (int i = 0; i < 6; ++i) {
    // 250 ms of the 300 ms outside tasks waiting for a CPU in the search for work (time/idle).
    f.window(100, 100e6, 300e6, 250e6, preempted_known ? 250e6 : -1);
    e.pump();
    e.run_periodic_now();
  }
  EXPECT_GE(k.int_value(), 1);
  return decisions_on(k.name(), from);
}

TEST(PreemptionPolicies, ThrottleKeepsWorkersThatWaitForACpu) {
  EXPECT_EQ(throttle_moves("pptestknown", true), 0u)
      << "workers kept off their CPU by another process are not idle";
  EXPECT_GE(throttle_moves("pptestunknown", false), 1u)
      << "without time/preempted the wait reads as idleness, as before";
}

// Tasks that run for the whole period (a tree search whose children run inline in one task):
// Σt_exec does not grow until they end, so the plain idle rate reads 1 while the workers never
// look for work (time/idle does not grow); throttle reads the search time and keeps them.
TEST(PreemptionPolicies, ThrottleKeepsWorkersInLongTasks) {
  grain::knob& k = grain::knobs().define_int("pool.pptestlong.workers", 1, 4, 4, "workers");
  const auto from = grain::knobs().decisions().size();
  engine e;
  e.load_string("require('throttle').start{ pool = 'pptestlong', patience = 2 }\n", "start.lua");
  feed f(e, "locality#0/pool#pptestlong/total");
  for (int i = 0; i < 6; ++i) {
    f.window(0, 0, 400e6, 0, 0);
    e.pump();
    e.run_periodic_now();
  }
  EXPECT_EQ(decisions_on(k.name(), from), 0u) << "a worker inside a long task is not idle";
  EXPECT_EQ(k.int_value(), 4);
}

}  // namespace
