// policies-lua/tune_grain.lua on a synthetic, noisy, convex iteration time of the grain knob
// (no runtime): it converges near the minimum within its budget, keeps the best point, and
// ignores steps that still ran with an older grain.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "common/lua_load.hpp"
#include "grain/clock.hpp"
#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace {

using grain::policy::engine;
namespace inst = grain::instrumentation;

// Step time of a model stencil (10 M points, 2 workers, 1 ns per point, 1 µs per task):
// T(nx) = P a / c + P o / (c nx) + a nx / 2, minimal at nx = 100,000 (5.1 ms).
double step_ns(double nx) {
  return 5e6 + 5e9 / nx + nx / 2;
}
constexpr double best_nx = 1e5;

// Runs `steps` iterations; the application picks a knob change up `lag` steps late, and
// reports it in the payload (nx) or, with use_counter, as /app/iteration-time.
void drive(engine& e, grain::knob& k, int steps, int lag, bool use_counter, double noise = 0.02) {
  std::mt19937 rng(7);
  std::normal_distribution<double> jitter(0, noise);
  std::vector<double> applied;
  for (int s = 0; s < steps; ++s) {
    applied.push_back(static_cast<double>(k.int_value()));
    const double nx = applied[applied.size() > static_cast<std::size_t>(lag)
                                  ? applied.size() - 1 - static_cast<std::size_t>(lag)
                                  : 0];
    const double t = step_ns(nx) * (1 + jitter(rng));
    inst::app_event ev;
    ev.time_ns = grain::now_ns();
    ev.name = "iteration";
    ev.payload = {{"step", static_cast<double>(s)}, {"nx", nx}};
    if (use_counter) {
      inst::counter_snapshot snap;
      snap.time_ns = ev.time_ns;
      snap.sequence = static_cast<std::uint64_t>(s);
      snap.layout_generation = 7101;
      snap.values.push_back({"/app/iteration-time", t, true, inst::counter_kind::raw});
      e.feed_sample(snap);
    } else {
      ev.payload.push_back({"duration_ns", t});
    }
    e.feed_event(ev);
    e.pump();
  }
}

class TuneGrain : public ::testing::TestWithParam<double> {};

TEST_P(TuneGrain, ConvergesOnConvexIterationTime) {
  const double start = best_nx * GetParam();
  const std::string name = "test.tg.nx" + std::to_string(static_cast<long long>(start));
  grain::knob& k =
      grain::knobs().define_int(name, 10, 10'000'000, static_cast<long long>(start), "nx");
  engine e;
  e.load_string("TG = require('tune_grain')\nTG.start{ knob = '" + name +
                    "', on_done = function(v, f, c) done = {v, f, c} end }\n",
                "start.lua");
  drive(e, k, 80, 1, false);
  const double nx = static_cast<double>(k.int_value());
  EXPECT_LT(step_ns(nx), 1.05 * step_ns(best_nx)) << "ended at nx " << nx;
  EXPECT_LT(std::fabs(std::log(nx / best_nx)), std::log(3.0)) << nx;
  EXPECT_EQ(grain::test::load_error(e,
                                    "assert(TG.state.phase == 'done')\n"
                                    "assert(done and done[1] == TG.state.best)\n"
                                    "assert(TG.state.evaluations <= 16, TG.state.evaluations)\n"),
            "");
  auto d = grain::knobs().decisions().back();
  EXPECT_EQ(d.knob, name);
  EXPECT_EQ(d.rule, "tune_grain");
  // Either the final "converged ... best" record or the evaluation that found the best (the
  // knob is then already there, and an unchanged value is no decision).
  EXPECT_TRUE(d.reason.find("best duration_ns") != std::string::npos ||
              d.new_value == static_cast<double>(k.int_value()))
      << d.reason;
  EXPECT_EQ(grain::test::load_error(e, "assert(TG.state.converged)"), "");
  // It keeps the best: nothing moves after the search ended.
  const auto n = grain::knobs().decisions().size();
  drive(e, k, 20, 1, false);
  EXPECT_EQ(grain::knobs().decisions().size(), n);
  EXPECT_EQ(static_cast<double>(k.int_value()), nx);
}

INSTANTIATE_TEST_SUITE_P(FineAndCoarse, TuneGrain, ::testing::Values(0.01, 100.0));

TEST(TuneGrainCounter, ReadsTheIterationTimeCounter) {
  grain::knob& k = grain::knobs().define_int("test.tg.counter", 10, 10'000'000, 3000, "nx");
  engine e;
  e.load_string(
      "TUNE_GRAIN = { knob = 'test.tg.counter', metric = '/app/iteration-time', window = 2 }",
      "config.lua");
  e.load_file(GRAIN_SOURCE_DIR "/policies-lua/tune_grain.lua");
  drive(e, k, 120, 0, true);
  EXPECT_LT(step_ns(static_cast<double>(k.int_value())), 1.05 * step_ns(best_nx)) << k.int_value();
  EXPECT_EQ(grain::knobs().decisions().back().rule, "tune_grain");
}

TEST(TuneGrainCounter, BadSettingsAreClearErrors) {
  grain::knobs().define_int("test.tg.bad", 10, 1000, 100, "nx");
  engine e;
  EXPECT_NE(grain::test::load_error(
                e, "require('tune_grain').start{ knob = 'test.tg.bad', strategy = 'x' }")
                .find("unknown setting 'strategy'"),
            std::string::npos);
  EXPECT_NE(grain::test::load_error(
                e, "require('tune_grain').start{ knob = 'test.tg.bad', tolerance = 1 }")
                .find("tolerance"),
            std::string::npos);
}

}  // namespace
