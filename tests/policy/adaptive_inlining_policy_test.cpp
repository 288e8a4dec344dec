// policies-lua/adaptive_inlining.lua on synthetic counter feeds (no runtime): windows whose
// worker time is dominated by task management, by starvation, or by useful work, made up so
// that each case is unambiguous. The policy must raise inline.lambda, lower it, or hold.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grain/clock.hpp"
#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace {

using grain::policy::engine;
namespace inst = grain::instrumentation;

// One window of worker time in ns, split the way the scheduler's counters split it.
struct window {
  double tasks = 0;
  double inlined = 0;
  double exec_ns = 0;
  double management_ns = 0;
  double idle_ns = 0;
};

// Feeds monotonic totals of the /threads{locality#0/total} counters, one snapshot per window.
class feed {
 public:
  explicit feed(engine& e) : e_(e) {}
  void step(const window& w) {
    tasks_ += w.tasks;
    inlined_ += w.inlined;
    exec_ += w.exec_ns;
    func_ += w.exec_ns + w.management_ns + w.idle_ns;
    idle_ += w.idle_ns;
    inst::counter_snapshot snap;
    snap.time_ns = grain::now_ns();
    snap.sequence = seq_++;
    snap.layout_generation = 7101;
    const std::string p = "/threads{locality#0/total}/";
    for (auto& [n, v] :
         std::vector<std::pair<std::string, double>>{{p + "count/cumulative", tasks_},
                                                     {p + "count/inline-tasks", inlined_},
                                                     {p + "time/cumulative", exec_},
                                                     {p + "time/idle", idle_},
                                                     {p + "time/overall", func_}})
      snap.values.push_back({n, v, true, inst::counter_kind::monotonic});
    e_.feed_sample(snap);
    e_.pump();
  }

 private:
  engine& e_;
  double tasks_ = 0, inlined_ = 0, exec_ = 0, func_ = 0, idle_ = 0;
  std::uint64_t seq_ = 1;
};

// inline.lambda as the runtime defines it (or the one a runtime in this process defined).
grain::knob& lambda_at(double v) {
  grain::knob& k = grain::knobs().define_double("inline.lambda", 0, 1000, 2, "inline lambda");
  k.set(v, "test");
  return k;
}

std::vector<grain::decision_record> decisions_since(std::size_t from) {
  std::vector<grain::decision_record> r;
  auto all = grain::knobs().decisions();
  for (std::size_t i = from; i < all.size(); ++i)
    if (all[i].knob == "inline.lambda" && all[i].rule == "adaptive_inlining") r.push_back(all[i]);
  return r;
}

void start_policy(engine& e) {
  e.load_string("AI = require('adaptive_inlining')\nAI.start{}\n", "start.lua");
}

// 100 ms of two workers' time (2e8 ns) per window.
const window overhead_dominated{200'000, 20'000, 1.4e8, 5.6e7, 4e6};  // 28 % management
const window starved{5'000, 4'990, 1.0e8, 1e6, 9.9e7};                // 49.5 % idle
const window efficient{50'000, 49'000, 1.9e8, 4e6, 6e6};              // 2 % and 3 %

}  // namespace

TEST(AdaptiveInliningPolicy, ManagementOverheadRaisesLambda) {
  grain::knob& k = lambda_at(4);
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e);
  feed f(e);
  f.step(overhead_dominated);  // the first snapshot only starts the window
  f.step(overhead_dominated);
  EXPECT_EQ(k.value(), 4) << "patience: one window is not enough";
  f.step(overhead_dominated);
  EXPECT_EQ(k.value(), 8);
  auto d = decisions_since(from);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].reason.find("inline more"), std::string::npos) << d[0].reason;
  EXPECT_NE(d[0].reason.find("management 28.0%"), std::string::npos) << d[0].reason;
  EXPECT_NE(d[0].reason.find("180000 of 200000 tasks spawned"), std::string::npos) << d[0].reason;
}

TEST(AdaptiveInliningPolicy, StarvationLowersLambda) {
  grain::knob& k = lambda_at(16);
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e);
  feed f(e);
  for (int i = 0; i < 5; ++i) f.step(starved);
  EXPECT_EQ(k.value(), 4) << "two halvings in four windows";
  auto d = decisions_since(from);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NE(d[0].reason.find("inline less"), std::string::npos) << d[0].reason;
  EXPECT_NE(d[0].reason.find("starvation 49.5%"), std::string::npos) << d[0].reason;
}

TEST(AdaptiveInliningPolicy, EfficientWindowsHold) {
  grain::knob& k = lambda_at(4);
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e);
  feed f(e);
  for (int i = 0; i < 6; ++i) f.step(efficient);
  EXPECT_EQ(k.value(), 4);
  EXPECT_TRUE(decisions_since(from).empty());
  // A change of regime is followed: overhead again, then back to efficient.
  for (int i = 0; i < 2; ++i) f.step(overhead_dominated);
  EXPECT_EQ(k.value(), 8);
  for (int i = 0; i < 4; ++i) f.step(efficient);
  EXPECT_EQ(k.value(), 8);
}

TEST(AdaptiveInliningPolicy, QuietWindowsAndBoundsAreRespected) {
  grain::knob& k = lambda_at(0.25);
  engine e;
  start_policy(e);
  feed f(e);
  // Fewer than min_tasks completed tasks: no task work, the idle time is not starvation.
  const window quiet{10, 0, 1e6, 1e6, 1.98e8};
  grain::knob& k2 = lambda_at(4);
  for (int i = 0; i < 5; ++i) f.step(quiet);
  EXPECT_EQ(k2.value(), 4) << "quiet windows are dropped";
  f.step(efficient);
  EXPECT_EQ(k2.value(), 4);
  // The window after quiet ones holds only its own time (3 % idle), not theirs (99 %).
  EXPECT_NO_THROW(e.load_string("assert(AI.state.starvation < 0.05, AI.state.starvation)"));
  k.set(0.25, "test");
  // Starved at the lower bound: nothing to lower.
  for (int i = 0; i < 4; ++i) f.step(starved);
  EXPECT_EQ(k.value(), 0.25);
}
