// policies-lua/adaptive_inlining.lua on synthetic counter feeds (no runtime): windows whose
// worker time is dominated by task management, by starvation, or by useful work, made up so
// that each case is unambiguous. The policy must raise inline.lambda, lower it, or hold.
#include <gtest/gtest.h>

#include <cmath>
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
  double seconds = 0.1;  // wall time of the window
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
    time_ns_ += static_cast<std::uint64_t>(w.seconds * 1e9);
    inst::counter_snapshot snap;
    snap.time_ns = time_ns_;
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
  std::uint64_t time_ns_ = grain::now_ns();
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

void start_policy(engine& e, const std::string& cfg = "") {
  e.load_string("AI = require('adaptive_inlining')\nAI.start{" + cfg + "}\n", "start.lua");
}

// An efficient window (2 % management, 3 % idle) whose task count is the program's task rate
// at the current lambda: the climb's only signal.
window at_rate(double tasks_per_second) {
  window w{0, 0, 1.9e8, 4e6, 6e6};
  w.tasks = tasks_per_second * w.seconds;
  w.inlined = w.tasks * 0.99;
  return w;
}

// A program whose task rate peaks at lambda = 64 (23 % lower one factor of 2 away).
double rate_at(double lambda) {
  const double x = std::log2(lambda / 64);
  return 1e8 / (1 + 0.3 * x * x);
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
  start_policy(e, "climb = false");
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

TEST(AdaptiveInliningPolicy, ClimbFindsTheTaskRatePeak) {
  grain::knob& k = lambda_at(16);
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e);
  feed f(e);
  f.step(at_rate(rate_at(16)));  // starts the first window
  for (int i = 0; i < 40; ++i) f.step(at_rate(rate_at(k.value())));
  EXPECT_EQ(k.value(), 64) << "up twice (+69 %, +30 %), then neither 128 nor 32 pays";
  EXPECT_NO_THROW(e.load_string("assert(AI.state.climb.phase == 'settled', AI.state.climb.phase)"));
  auto d = decisions_since(from);
  ASSERT_GE(d.size(), 4u);
  EXPECT_NE(d[0].reason.find("trying 32"), std::string::npos) << d[0].reason;
  EXPECT_NE(d[1].reason.find("task rate +"), std::string::npos) << d[1].reason;
  EXPECT_NE(d.back().reason.find("back to 64"), std::string::npos) << d.back().reason;
}

TEST(AdaptiveInliningPolicy, ClimbSettlesWhereNoMovePays) {
  grain::knob& k = lambda_at(8);
  engine e;
  start_policy(e);
  feed f(e);
  for (int i = 0; i < 20; ++i) f.step(at_rate(5e7));  // the rate does not depend on lambda
  EXPECT_EQ(k.value(), 8);
  EXPECT_NO_THROW(e.load_string("assert(AI.state.climb.phase == 'settled', AI.state.climb.phase)"));
  // Settled, it stays put until `reprobe` windows have passed.
  const auto from = grain::knobs().decisions().size();
  for (int i = 0; i < 10; ++i) f.step(at_rate(5e7));
  EXPECT_TRUE(decisions_since(from).empty());
}
