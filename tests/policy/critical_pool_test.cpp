// policies-lua/critical_pool.lua on synthetic counter feeds (no runtime): the snapshots a
// program with a critical and a default pool would produce, from a model of 16 workers split
// (c, 16 - c) where each pool's tasks wait like an M/M/c-ish queue at its load per worker and the
// run takes as long as the more loaded pool needs — so the best static split is known, and the
// policy is started from the worst one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "grain/clock.hpp"
#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace {

using grain::policy::engine;
namespace inst = grain::instrumentation;

constexpr int workers = 16;

// Critical tasks need `crit_load` workers' worth of time, the others `other_load`.
struct split_model {
  double crit_load = 10, other_load = 4;
  double wait_scale_ns = 20'000;

  static double wait(double load, double c, double scale) {
    const double rho = load / c;
    return rho >= 0.98 ? scale * 50 : scale * rho / (1 - rho);
  }
  double wait_c(int c) const { return wait(crit_load, c, wait_scale_ns); }
  double wait_d(int c) const { return wait(other_load, workers - c, wait_scale_ns); }
  double idle_c(int c) const { return 1 - std::min(1.0, crit_load / c); }
  double idle_d(int c) const { return 1 - std::min(1.0, other_load / (workers - c)); }
  double time(int c) const { return std::max(crit_load / c, other_load / (workers - c)); }
  int best() const {
    int b = 1;
    for (int c = 1; c < workers; ++c)
      if (time(c) < time(b)) b = c;
    return b;
  }
  int worst() const {
    int w = 1;
    for (int c = 1; c < workers; ++c)
      if (time(c) > time(w)) w = c;
    return w;
  }
};

// Monotonic per-pool totals fed as /threads{locality#0/pool#P/total} snapshots, 10 ms apart.
class pool_feed {
 public:
  pool_feed(engine& e, std::string pool) : e_(e), pool_(std::move(pool)) {}

  // One sample with the critical pool at share c; `waits` measured tasks per pool (0: none).
  void sample(const split_model& m, int c, double waits = 100) {
    add(crit_, m.wait_c(c), m.idle_c(c), c, waits);
    add(def_, m.wait_d(c), m.idle_d(c), workers - c, waits);
    inst::counter_snapshot snap;
    snap.time_ns = grain::now_ns();
    snap.sequence = seq_++;
    snap.layout_generation = 9301;
    put(snap, pool_, crit_);
    put(snap, "default", def_);
    std::sort(snap.values.begin(), snap.values.end(),
              [](auto& a, auto& b) { return a.name < b.name; });
    e_.feed_sample(snap);
    e_.pump();
  }

 private:
  struct totals {
    double ss = 0, sn = 0, ps = 0, pn = 0, func = 0, exec = 0;
  };
  static void add(totals& t, double wait, double idle, int n, double waits) {
    t.ss += wait * waits * 0.8;
    t.sn += waits * 0.8;
    t.ps += wait * waits * 0.2;
    t.pn += waits * 0.2;
    const double func = 10e6 * n;  // 10 ms per worker
    t.func += func;
    t.exec += func * (1 - idle);
  }
  static void put(inst::counter_snapshot& s, const std::string& pool, const totals& t) {
    const std::string p = "/threads{locality#0/pool#" + pool + "/total}/";
    for (auto& [n, v] :
         std::vector<std::pair<std::string, double>>{{p + "wait-time/staged-sum", t.ss},
                                                     {p + "wait-time/staged-count", t.sn},
                                                     {p + "wait-time/pending-sum", t.ps},
                                                     {p + "wait-time/pending-count", t.pn},
                                                     {p + "time/overall", t.func},
                                                     {p + "time/cumulative", t.exec}})
      s.values.push_back({n, v, true, inst::counter_kind::monotonic});
  }
  engine& e_;
  std::string pool_;
  totals crit_, def_;
  std::uint64_t seq_ = 1;
};

std::vector<grain::decision_record> decisions_on(const std::string& knob, std::size_t from) {
  std::vector<grain::decision_record> r;
  auto all = grain::knobs().decisions();
  for (std::size_t i = from; i < all.size(); ++i)
    if (all[i].knob == knob) r.push_back(all[i]);
  return r;
}

grain::knob& share_knob(const std::string& pool, int start) {
  grain::knob& k = grain::knobs().define_int("pool." + pool + ".share", 1, workers - 1, start,
                                             "test: workers serving " + pool);
  k.set(start, "test start");
  return k;
}

void start_policy(engine& e, const std::string& pool) {
  e.load_string("require('critical_pool').start{ pool = '" + pool +
                    "', window = 2, patience = 2, cooldown = 1 }\n",
                "start.lua");
}

// Runs the policy from `start` for `samples` samples; returns the share it ends at.
int run_from(const split_model& m, const std::string& pool, int start, int samples) {
  grain::knob& k = share_knob(pool, start);
  engine e;
  start_policy(e, pool);
  pool_feed f(e, pool);
  for (int i = 0; i < samples; ++i) f.sample(m, static_cast<int>(k.int_value()));
  return static_cast<int>(k.int_value());
}

TEST(CriticalPoolPolicy, FromTheWorstSplitReachesTheBestWithinFivePercent) {
  const split_model m;  // critical tasks need 10 workers, the others 4: best (11, 5)
  ASSERT_EQ(m.best(), 11);
  ASSERT_EQ(m.worst(), 1);
  const auto from = grain::knobs().decisions().size();
  const int end = run_from(m, "cpw", m.worst(), 400);
  EXPECT_LE(m.time(end), 1.05 * m.time(m.best())) << "ended at " << end;
  EXPECT_EQ(end, m.best()) << "the neighbours are 10 % slower";
  auto d = decisions_on("pool.cpw.share", from);
  ASSERT_GE(d.size(), 10u) << "one worker per move, from 1 to about 11";
  EXPECT_EQ(d[1].rule, "critical_pool:cpw");
  EXPECT_NE(d[1].reason.find("cpw tasks wait"), std::string::npos) << d[1].reason;
  EXPECT_NE(d[1].reason.find("one more cpw worker"), std::string::npos) << d[1].reason;
}

TEST(CriticalPoolPolicy, FromTheOtherEndItMovesWorkersBackToDefault) {
  split_model m;
  m.crit_load = 3;
  m.other_load = 11;  // best (4, 12)
  const int best = m.best();
  const auto from = grain::knobs().decisions().size();
  const int end = run_from(m, "cpo", workers - 1, 400);
  EXPECT_LE(m.time(end), 1.05 * m.time(best)) << "ended at " << end << ", best " << best;
  EXPECT_EQ(best, 4);
  EXPECT_EQ(end, best);
  auto d = decisions_on("pool.cpo.share", from);
  ASSERT_GE(d.size(), 2u);
  EXPECT_NE(d[1].reason.find("default tasks wait"), std::string::npos) << d[1].reason;
}

TEST(CriticalPoolPolicy, SettlesAndStopsMoving) {
  const split_model m;
  grain::knob& k = share_knob("cps", m.worst());
  engine e;
  start_policy(e, "cps");
  pool_feed f(e, "cps");
  for (int i = 0; i < 400; ++i) f.sample(m, static_cast<int>(k.int_value()));
  const auto from = grain::knobs().decisions().size();
  const auto settled_at = k.int_value();
  for (int i = 0; i < 200; ++i) f.sample(m, static_cast<int>(k.int_value()));
  EXPECT_TRUE(decisions_on("pool.cps.share", from).empty()) << "it keeps moving";
  EXPECT_EQ(k.int_value(), settled_at);
}

TEST(CriticalPoolPolicy, WithoutWaitSamplesTheIdlePoolGivesAWorker) {
  split_model m;
  m.crit_load = 1;  // at share 8 the critical pool idles 7/8, default is saturated
  m.other_load = 9;
  grain::knob& k = share_knob("cpi", 8);
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, "cpi");
  pool_feed f(e, "cpi");
  for (int i = 0; i < 12; ++i) f.sample(m, static_cast<int>(k.int_value()), 0);
  EXPECT_LT(k.int_value(), 8);
  auto d = decisions_on("pool.cpi.share", from);
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d.back().reason.find("cpi idle"), std::string::npos) << d.back().reason;
}

TEST(CriticalPoolPolicy, BalancedWaitsMoveNothing) {
  split_model m;
  m.crit_load = 6;
  m.other_load = 6;  // at (8, 8) both pools wait alike
  grain::knob& k = share_knob("cpb", 8);
  const auto from = grain::knobs().decisions().size();
  engine e;
  start_policy(e, "cpb");
  pool_feed f(e, "cpb");
  for (int i = 0; i < 100; ++i) f.sample(m, static_cast<int>(k.int_value()));
  EXPECT_EQ(k.int_value(), 8);
  EXPECT_TRUE(decisions_on("pool.cpb.share", from).empty());
}

}  // namespace
