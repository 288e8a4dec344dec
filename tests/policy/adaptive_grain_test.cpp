// policies-lua/adaptive_grain.lua on synthetic counter feeds (no runtime): the engine gets
// the snapshots and iteration events an application with a grain knob would produce, made up
// here so that each regime docs/policies.md describes (overhead-dominated, starved, efficient) can
// be fed on purpose, and a model stencil whose step time has its minimum in the middle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/lua_load.hpp"
#include "grain/clock.hpp"
#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace {

using grain::policy::engine;
namespace inst = grain::instrumentation;

// One window of worker time, in ns, split the way the scheduler's counters split it.
struct step_counters {
  double tasks = 0;
  double exec_ns = 0;        // inside tasks (Σt_exec)
  double management_ns = 0;  // scheduling work (part of Σt_func - Σt_exec)
  double idle_ns = 0;        // looking for work and finding none
  double duration_ns = 0;    // the step's wall time (event payload)
};

// Feeds monotonic totals of the /threads{locality#0/total} counters, one snapshot and one
// iteration event per step, like grain-stencil does (it samples right before the event).
class feed {
 public:
  explicit feed(engine& e) : e_(e) {}

  void step(const step_counters& s, double nx, double partitions = 0) {
    snapshot(s);
    inst::app_event ev;
    ev.time_ns = grain::now_ns();
    ev.name = "iteration";
    ev.payload = {
        {"step", static_cast<double>(step_++)}, {"nx", nx}, {"duration_ns", s.duration_ns}};
    if (partitions > 0) ev.payload.push_back({"partitions", partitions});
    e_.feed_event(ev);
    e_.pump();
  }

  // The event grain-stencil raises when it submits a step, before the step runs.
  void announce(double nx, double partitions) {
    inst::app_event ev;
    ev.time_ns = grain::now_ns();
    ev.name = "iteration-start";
    ev.payload = {{"step", static_cast<double>(step_)}, {"nx", nx}, {"partitions", partitions}};
    e_.feed_event(ev);
    e_.pump();
  }

  // A counter snapshot of s's counters (added to the totals), without an event.
  void snapshot(const step_counters& s) {
    tasks_ += s.tasks;
    exec_ += s.exec_ns;
    func_ += s.exec_ns + s.management_ns + s.idle_ns;
    idle_ += s.idle_ns;
    accesses_ += 2 * s.tasks;
    misses_ += s.tasks + s.idle_ns / 1000;  // every idle µs is a few empty lookups
    inst::counter_snapshot snap;
    snap.time_ns = grain::now_ns();
    snap.sequence = seq_++;
    snap.layout_generation = workers > 0 ? 7002 : 7001;
    if (workers > 0)
      snap.values.push_back({"/threads{locality#0/total}/count/active-workers", workers, true,
                             inst::counter_kind::gauge});
    const std::string p = "/threads{locality#0/total}/";
    for (auto& [n, v] :
         std::vector<std::pair<std::string, double>>{{p + "count/cumulative", tasks_},
                                                     {p + "count/pending-accesses", accesses_},
                                                     {p + "count/pending-misses", misses_},
                                                     {p + "time/cumulative", exec_},
                                                     {p + "time/idle", idle_},
                                                     {p + "time/overall", func_}})
      snap.values.push_back({n, v, true, inst::counter_kind::monotonic});
    std::sort(snap.values.begin(), snap.values.end(),
              [](auto& a, auto& b) { return a.name < b.name; });
    e_.feed_sample(snap);
    e_.pump();
  }

  double workers = 0;  // > 0: also feed the active-worker count

 private:
  engine& e_;
  double tasks_ = 0, exec_ = 0, func_ = 0, idle_ = 0, accesses_ = 0, misses_ = 0;
  std::uint64_t seq_ = 1;
  int step_ = 0;
};

// A model 1-D stencil: P points, c workers, a ns per point, o ns of management per task.
// Greedy list scheduling of n = P/nx tasks of d = a*nx: T = n(d+o)/c + (1-1/c)d; what is not
// task or management time is idle. Its minimum is at nx* = sqrt(2Po/(ca)).
struct model {
  double points = 1e7, workers = 2, ns_per_point = 1, overhead_ns = 1000;

  step_counters at(double nx) const {
    const double n = std::max(1.0, std::ceil(points / nx));
    const double d = ns_per_point * points / n;
    step_counters s;
    s.tasks = n;
    s.exec_ns = n * d;
    s.management_ns = n * overhead_ns;
    s.duration_ns = std::max(d + overhead_ns, n * (d + overhead_ns) / workers) +
                    (1 - 1 / workers) * d * (n > 1 ? 1 : 0);
    s.idle_ns = std::max(0.0, workers * s.duration_ns - s.exec_ns - s.management_ns);
    return s;
  }
  double best_nx() const { return std::sqrt(2 * points * overhead_ns / (workers * ns_per_point)); }
  double best_time() const {
    double best = 1e300;
    for (double nx = 10; nx <= points; nx *= 1.02) best = std::min(best, at(nx).duration_ns);
    return best;
  }
};

// Decisions of the policy on one knob since index `from` of the decision log.
std::vector<grain::decision_record> decisions_on(const std::string& knob, std::size_t from) {
  std::vector<grain::decision_record> r;
  auto all = grain::knobs().decisions();
  for (std::size_t i = from; i < all.size(); ++i)
    if (all[i].knob == knob) r.push_back(all[i]);
  return r;
}

void start_policy(engine& e, const std::string& knob, const std::string& extra = "") {
  e.load_string("AG = require('adaptive_grain')\nAG.start{ knob = '" + knob + "'" +
                    (extra.empty() ? "" : ", " + extra) + " }\n",
                "start.lua");
}

TEST(AdaptiveGrain, OverheadDominatedFeedCoarsens) {
  grain::knob& k = grain::knobs().define_int("test.ag.coarsen", 10, 10'000'000, 1000, "nx");
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, k.name());
  feed f(e);
  // 10,000 tasks of 1 µs, each with 1.5 µs of management: t_d is far below 100 t_m.
  const step_counters fine{1e4, 1e7, 1.5e7, 2e5, 1.3e7};
  for (int i = 0; i < 2; ++i) f.step(fine, static_cast<double>(k.int_value()));
  EXPECT_GT(k.int_value(), 1000 * 4) << "a large first step";
  auto d = decisions_on(k.name(), from);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rule, "adaptive_grain");
  EXPECT_NE(d[0].reason.find("t_d < 50 t_m: coarsen"), std::string::npos) << d[0].reason;
  EXPECT_NE(d[0].reason.find("t_d 1.0 us, t_m 1.5 us"), std::string::npos) << d[0].reason;
  // The trigger values are the counters the rule read.
  bool saw_overall = false;
  for (auto& [name, v] : d[0].trigger) saw_overall |= name.find("time/overall") != name.npos;
  EXPECT_TRUE(saw_overall);
}

TEST(AdaptiveGrain, ClampsToTheKnobRangeAndStopsAtItsEnd) {
  grain::knob& k = grain::knobs().define_int("test.ag.clamp", 100, 20'000, 1000, "nx");
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, k.name());
  feed f(e);
  // Far too fine everywhere in the range: 1 ns per point plus 1.5 µs management per task.
  auto fine = [](double nx) {
    const double tasks = 1e7 / nx;
    return step_counters{tasks, 1e7, tasks * 1500, 1e5, 1e7};
  };
  for (int i = 0; i < 20; ++i) {
    const auto nx = static_cast<double>(k.int_value());
    f.step(fine(nx), nx);
  }
  EXPECT_EQ(k.int_value(), 20'000);
  auto d = decisions_on(k.name(), from);
  ASSERT_EQ(d.size(), 1u) << "one clamped move, then nothing; the last: " << d.back().old_value
                          << " -> " << d.back().new_value << ": " << d.back().reason;
  EXPECT_TRUE(d[0].clamped);
  EXPECT_EQ(d[0].new_value, 20'000);
  EXPECT_EQ(grain::test::load_error(e,
                                    "assert(AG.state.phase == 'settled', AG.state.phase)\n"
                                    "assert(AG.state.why:find('at its limit'), AG.state.why)\n"),
            "");
}

TEST(AdaptiveGrain, StarvationFeedRefines) {
  grain::knob& k = grain::knobs().define_int("test.ag.refine", 10, 10'000'000, 10'000'000, "nx");
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, k.name());
  feed f(e);
  // One partition for two workers: one task of 10 ms, the other worker idle all along.
  const step_counters coarse{1, 1e7, 2e3, 1e7, 1e7};
  // The first step opens the window; starvation must show in `confirm` = 2 windows.
  f.step(coarse, 1e7);
  f.step(coarse, 1e7);
  EXPECT_EQ(k.int_value(), 10'000'000);
  f.step(coarse, 1e7);
  EXPECT_LT(k.int_value(), 10'000'000 / 4);
  auto d = decisions_on(k.name(), from);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].reason.find("starvation 50%"), std::string::npos) << d[0].reason;
  EXPECT_NE(d[0].reason.find("refine"), std::string::npos) << d[0].reason;
}

TEST(AdaptiveGrain, FewerPartitionsThanWorkersRefine) {
  grain::knob& k = grain::knobs().define_int("test.ag.parts", 10, 10'000'000, 5'000'000, "nx");
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, k.name());
  feed f(e);
  f.workers = 4;  // /threads{locality#0/total}/count/active-workers
  // Two partitions for four workers, although this feed shows no idle time at all.
  const step_counters two{2, 1e7, 2e3, 0, 5e6};
  f.step(two, 5e6, 2);
  f.step(two, 5e6, 2);
  EXPECT_LT(k.int_value(), 5'000'000);
  auto d = decisions_on(k.name(), from);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].reason.find("2 partitions for 4 workers: refine"), std::string::npos)
      << d[0].reason;
}

TEST(AdaptiveGrain, TooFewPartitionsRefineEvenWhenManagementLooksExpensive) {
  // One partition for two workers on a loaded machine: a preempted worker's time counts as
  // management, so t_m looked like 500 µs and "t_d < 50 t_m" said coarsen; at the knob's
  // limit the policy then settled on one partition (a CI run of grain-stencil did this).
  grain::knob& k = grain::knobs().define_int("test.ag.loaded", 10, 2'000'000, 2'000'000, "nx");
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, k.name(), "coarse_jump = false");
  feed f(e);
  f.workers = 2;
  const step_counters loaded{10, 1e7, 5e6, 1e7, 1e7};
  f.step(loaded, 2e6, 1);
  f.step(loaded, 2e6, 1);
  EXPECT_LE(k.int_value(), 2'000'000 / 4) << "at least two partitions per worker";
  auto d = decisions_on(k.name(), from);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].reason.find("1 partitions for 2 workers: refine"), std::string::npos)
      << d[0].reason;
}

TEST(AdaptiveGrain, RefiningNeverGoesBelowTheTargetTaskDuration) {
  grain::knob& k = grain::knobs().define_int("test.ag.floor", 10, 10'000'000, 8'000'000, "nx");
  engine e;
  start_policy(e, k.name(), "coarse_jump = false");  // the counter rules, not the first jump
  feed f(e);
  f.workers = 2;
  // Two partitions (8 M and 2 M points) for two workers: refine.
  const step_counters two{2, 6e6, 2e3, 4e6, 5e6};
  f.step(two, 8e6, 2);
  f.step(two, 8e6, 2);
  const auto refined = k.int_value();
  ASSERT_LT(refined, 8'000'000);
  // At the new grain tasks take 300 µs but the workers still starve 30 %; fitted against the
  // first grain, most of t_d does not shrink with the grain (b > the 80 µs target): a finer
  // grain would only be overhead, so it must not refine (it once went to grain / 64 here).
  const double tasks = 1e7 / static_cast<double>(refined);
  const step_counters starved{tasks, tasks * 3e5, tasks * 200, tasks * 1.3e5, 5e6};
  for (int i = 0; i < 12; ++i) f.step(starved, static_cast<double>(k.int_value()), tasks);
  EXPECT_EQ(k.int_value(), refined);
}

TEST(AdaptiveGrain, FirstStepWithTooFewPartitionsJumpsWithoutCounters) {
  grain::knob& k = grain::knobs().define_int("test.ag.jump", 10, 10'000'000, 8'000'000, "nx");
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, k.name());
  feed f(e);
  f.workers = 2;
  // The very first step: 2 partitions for 2 workers. No counter window exists yet, and none
  // is needed: the grain goes at once to coarse_jump (100) partitions per worker.
  const step_counters two{2, 6e6, 2e3, 4e6, 5e6};
  f.step(two, 8e6, 2);
  EXPECT_EQ(k.int_value(), 80'000);  // nx * partitions / (100 per worker * 2 workers)
  auto d = decisions_on(k.name(), from);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].reason.find("2 partitions for 2 workers: refine to 100 per worker (first step)"),
            std::string::npos)
      << d[0].reason;
  // Enough partitions: no jump.
  grain::knob& k2 = grain::knobs().define_int("test.ag.nojump", 10, 10'000'000, 100'000, "nx");
  engine e2;
  start_policy(e2, k2.name());
  feed f2(e2);
  f2.workers = 2;
  const step_counters good{100, 1e7, 5e4, 1e5, 5.1e6};
  f2.step(good, 1e5, 100);
  EXPECT_EQ(k2.int_value(), 100'000);
}

// grain-stencil announces a step before it runs (iteration-start): the jump is taken then, so
// that the step's running partitions can follow it, and the step's own end does not move again.
TEST(AdaptiveGrain, AnnouncedStepWithTooFewPartitionsJumpsBeforeItEnds) {
  grain::knob& k = grain::knobs().define_int("test.ag.announce", 10, 10'000'000, 8'000'000, "nx");
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, k.name());
  feed f(e);
  f.workers = 2;
  f.snapshot({});  // what the sampler has seen before the first step: the worker count
  f.announce(8e6, 2);
  EXPECT_EQ(k.int_value(), 80'000);
  const step_counters two{2, 6e6, 2e3, 4e6, 5e6};
  f.step(two, 8e6, 2);  // the step ends; it was planned with the old grain
  EXPECT_EQ(k.int_value(), 80'000);
  EXPECT_EQ(decisions_on(k.name(), from).size(), 1u);
  // Without the announcement setting, only the step's end moves the knob.
  grain::knob& k2 =
      grain::knobs().define_int("test.ag.noannounce", 10, 10'000'000, 8'000'000, "nx");
  engine e2;
  start_policy(e2, k2.name(), "start_trigger = false");
  feed f2(e2);
  f2.workers = 2;
  f2.snapshot({});
  f2.announce(8e6, 2);
  EXPECT_EQ(k2.int_value(), 8'000'000);
  f2.step(two, 8e6, 2);
  EXPECT_EQ(k2.int_value(), 80'000);
}

TEST(AdaptiveGrain, EfficientFeedHoldsAndSettles) {
  grain::knob& k = grain::knobs().define_int("test.ag.hold", 10, 10'000'000, 100'000, "nx");
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, k.name());
  feed f(e);
  // 100 tasks of 100 µs, 0.5 µs management each, a little idle time at the end of the step.
  const step_counters good{100, 1e7, 5e4, 1e5, 5.1e6};
  for (int i = 0; i < 6; ++i) f.step(good, static_cast<double>(k.int_value()));
  EXPECT_EQ(k.int_value(), 100'000);
  EXPECT_TRUE(decisions_on(k.name(), from).empty());
  EXPECT_EQ(
      grain::test::load_error(e,
                              "assert(AG.state.phase == 'settled', AG.state.phase)\n"
                              "assert(AG.state.why:find('efficient region'), AG.state.why)\n"),
      "");
}

TEST(AdaptiveGrain, SettledPolicyReopensWhenIterationsGetSlower) {
  grain::knob& k = grain::knobs().define_int("test.ag.reopen", 10, 10'000'000, 100'000, "nx");
  engine e;
  start_policy(e, k.name());
  feed f(e);
  // 20 tasks of 500 µs.
  const step_counters good{20, 1e7, 1e4, 1e5, 5.1e6};
  for (int i = 0; i < 6; ++i) f.step(good, 100'000);
  ASSERT_EQ(grain::test::load_error(e, "assert(AG.state.phase == 'settled')"), "");
  // Starvation at the same speed: nothing to gain, it stays (the counters said so before).
  const step_counters starved_same{20, 1e7, 1e4, 2e6, 5.1e6};
  for (int i = 0; i < 5; ++i) f.step(starved_same, 100'000);
  EXPECT_EQ(k.int_value(), 100'000);
  // Starvation with iterations 60 % slower (say half the work went away from some
  // partitions): after `patience` steps it searches again, refining.
  const step_counters starved_slow{20, 1e7, 1e4, 6e6, 8e6};
  // (the mean of the last 4 steps passes 1.5x after 4 of them, then `patience` = 4 steps)
  for (int i = 0; i < 6; ++i) f.step(starved_slow, 100'000);
  EXPECT_EQ(k.int_value(), 100'000) << "patience";
  f.step(starved_slow, 100'000);
  EXPECT_LT(k.int_value(), 100'000);
  EXPECT_NE(grain::knobs().decisions().back().reason.find("re-opened"), std::string::npos);
}

TEST(AdaptiveGrain, StepsThatRanWithAnOlderGrainAreNotJudged) {
  grain::knob& k = grain::knobs().define_int("test.ag.stale", 10, 10'000'000, 1000, "nx");
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, k.name());
  feed f(e);
  const step_counters fine{1e4, 1e7, 1.5e7, 2e5, 1.3e7};
  f.step(fine, 1000);
  f.step(fine, 1000);  // decides: coarsen
  const auto after_first = k.int_value();
  ASSERT_GT(after_first, 1000);
  // The application has not re-partitioned yet: these steps still report nx = 1000 and must
  // not make the policy coarsen again on top.
  for (int i = 0; i < 3; ++i) f.step(fine, 1000);
  EXPECT_EQ(k.int_value(), after_first);
  EXPECT_EQ(decisions_on(k.name(), from).size(), 1u);
}

TEST(AdaptiveGrain, SlowerIterationsAreUndone) {
  grain::knob& k = grain::knobs().define_int("test.ag.guard", 10, 10'000'000, 50'000, "nx");
  engine e;
  start_policy(e, k.name(), "settle_after = 100");
  feed f(e);
  // 50,000 is efficient and its step time known ...
  const step_counters good{200, 1e7, 4e4, 1e5, 1e7};
  for (int i = 0; i < 6; ++i) f.step(good, 50'000);
  ASSERT_EQ(k.int_value(), 50'000);
  // ... then the counters say "too fine" everywhere (tasks of 0.1 ns per point: 5 µs at
  // 50,000, below min_task_ns / 2), but steps
  // at coarser grains are twice as slow (what the counters cannot see, e.g. partitions that
  // no longer fit in the cache).
  auto misleading = [](double nx) {
    const double tasks = 1e7 / nx;
    return step_counters{tasks, 1e6, tasks * 200, 1e5, nx <= 50'000 ? 1e7 : 2e7};
  };
  int moves_out = 0;
  for (int i = 0; i < 100; ++i) {
    const auto nx = static_cast<double>(k.int_value());
    moves_out += nx != 50'000;
    f.step(misleading(nx), nx);
  }
  EXPECT_EQ(k.int_value(), 50'000) << "went back to the fastest grain";
  EXPECT_GT(moves_out, 0) << "it did try the counters' advice";
  bool back = false;
  for (auto& d : grain::knobs().decisions())
    if (d.knob == k.name() && d.reason.find(": back") != std::string::npos) back = true;
  EXPECT_TRUE(back);
  // Each try came closer (the bracket and the step cap shrink), then it settled there.
  EXPECT_EQ(grain::test::load_error(e, "assert(AG.state.phase == 'settled', AG.state.phase)"), "");
  const auto n = grain::knobs().decisions().size();
  for (int i = 0; i < 10; ++i) f.step(misleading(50'000), 50'000);
  EXPECT_EQ(grain::knobs().decisions().size(), n);
}

TEST(AdaptiveGrain, UnavailableTimingCountersHold) {
  grain::knob& k = grain::knobs().define_int("test.ag.notiming", 10, 1000, 100, "nx");
  engine e;
  start_policy(e, k.name());
  for (int i = 0; i < 3; ++i) {
    inst::app_event ev;
    ev.name = "iteration";
    ev.payload = {{"nx", 100}, {"duration_ns", 1e6}};
    e.feed_event(ev);
    e.pump();
  }
  EXPECT_EQ(k.int_value(), 100);
  for (auto& r : e.rules()) EXPECT_EQ(r.errors, 0u) << r.name << ": " << r.last_error;
}

TEST(AdaptiveGrain, BadSettingsAreClearErrors) {
  grain::knobs().define_int("test.ag.bad", 10, 1000, 100, "nx");
  grain::knobs().define_enum("test.ag.enum", {"a", "b"}, "a", "not a grain");
  engine e;
  EXPECT_NE(grain::test::load_error(
                e, "require('adaptive_grain').start{ knob = 'test.ag.bad', factor = 2 }")
                .find("unknown setting 'factor'"),
            std::string::npos);
  EXPECT_NE(grain::test::load_error(e, "require('adaptive_grain').start{ knob = 'test.ag.enum' }")
                .find("not a number"),
            std::string::npos);
  EXPECT_NE(grain::test::load_error(e, "require('adaptive_grain').start{ knob = 'no.such.knob' }")
                .find("no.such.knob"),
            std::string::npos);
}

// The model stencil from a grain 100x too fine and 100x too coarse: the policy reaches the
// efficient region in a few steps, then stops moving.
class AdaptiveGrainModel : public ::testing::TestWithParam<double> {};

TEST_P(AdaptiveGrainModel, ConvergesAndStops) {
  const model m;
  const double start = m.best_nx() * GetParam();
  const std::string name =
      "test.ag.model" + std::to_string(static_cast<long long>(GetParam() * 1000));
  grain::knob& k =
      grain::knobs().define_int(name, 10, 10'000'000, static_cast<long long>(start), "nx");
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, name);
  feed f(e);
  double total = 0;
  std::vector<double> trail;
  for (int step = 0; step < 50; ++step) {
    const double nx = static_cast<double>(k.int_value());
    trail.push_back(nx);
    const auto s = m.at(nx);
    total += s.duration_ns;
    f.step(s, nx);
  }
  const double final_time = m.at(static_cast<double>(k.int_value())).duration_ns;
  EXPECT_LT(final_time, 1.05 * m.best_time())
      << "ended at nx " << k.int_value() << ", best " << m.best_nx();
  // Like the benchmark target: the whole run within 1.10x of the best static grain.
  EXPECT_LT(total, 1.10 * 50 * m.best_time());
  // It stopped moving: no decision in the last 30 steps, and few moves overall.
  auto d = decisions_on(name, from);
  EXPECT_LE(d.size(), 6u);
  for (int i = 20; i < 50; ++i) EXPECT_EQ(trail[i], trail[20]) << "moved at step " << i;
  EXPECT_EQ(grain::test::load_error(e, "assert(AG.state.phase == 'settled', AG.state.phase)"), "");
}

INSTANTIATE_TEST_SUITE_P(FineAndCoarse, AdaptiveGrainModel, ::testing::Values(0.01, 100.0));

}  // namespace
