// Every search strategy converges on noisy synthetic objectives within its documented budget
// (grain/policy/tuning.hpp). Noise: Gaussian, evaluated as the median of a window of 3, like a
// tuner with window = 3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "grain/policy/tuning.hpp"

namespace {

using grain::knob_type;
using grain::policy::tuning::make_strategy;
using grain::policy::tuning::parameter;
using grain::policy::tuning::point;
using grain::policy::tuning::strategy_names;

parameter dbl(std::string n, double lo, double hi, double init) {
  parameter p;
  p.name = std::move(n);
  p.type = knob_type::real;
  p.min = lo;
  p.max = hi;
  p.initial = init;
  return p;
}

parameter integer(std::string n, double lo, double hi, double step, double init) {
  parameter p = dbl(std::move(n), lo, hi, init);
  p.type = knob_type::integer;
  p.step = step;
  return p;
}

parameter enumeration(std::string n, std::vector<std::string> v, double init) {
  parameter p;
  p.name = std::move(n);
  p.type = knob_type::enumeration;
  p.min = 0;
  p.max = static_cast<double>(v.size() - 1);
  p.step = 1;
  p.values = std::move(v);
  p.initial = init;
  return p;
}

struct result {
  point best;
  std::size_t evaluations, budget;
};

// Runs a search with noisy evaluations; the noise is relative to the objective's scale.
result run(std::string_view strategy, std::vector<parameter> params,
           const std::function<double(const point&)>& f, double noise_sd, std::uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, noise_sd);
  auto s = make_strategy(strategy, std::move(params));
  while (auto p = s->ask()) {
    double w[3];
    for (double& x : w) x = f(*p) + noise(rng);
    std::sort(w, w + 3);
    s->tell(w[1]);
  }
  return {s->best(), s->evaluations(), s->budget()};
}

// Tolerances by strategy: the local ones (Nelder-Mead, hill climbing) and exhaustive must get
// close; the sampling ones (random, annealing, genetic) within a coarser distance.
double tolerance(std::string_view s, double tight, double loose) {
  return (s == "nelder_mead" || s == "hill_climb" || s == "exhaustive") ? tight : loose;
}

class Strategies : public ::testing::TestWithParam<std::string> {};

TEST_P(Strategies, Continuous2D) {
  const std::string s = GetParam();
  auto f = [](const point& p) { return (p[0] - 0.3) * (p[0] - 0.3) + (p[1] - 0.7) * (p[1] - 0.7); };
  auto r = run(s, {dbl("x", 0, 1, 0.9), dbl("y", 0, 1, 0.1)}, f, 0.002);
  EXPECT_LE(r.evaluations, r.budget);
  const double dist = std::sqrt(f(r.best));
  EXPECT_LE(dist, tolerance(s, 0.06, 0.2)) << s << " best " << r.best[0] << "," << r.best[1];
}

TEST_P(Strategies, Integer1D) {
  const std::string s = GetParam();
  auto f = [](const point& p) { return std::fabs(p[0] - 37.0) / 100.0; };
  auto r = run(s, {integer("n", 0, 100, 1, 90)}, f, 0.005);
  EXPECT_LE(r.evaluations, r.budget);
  EXPECT_EQ(r.best[0], std::round(r.best[0]));
  EXPECT_LE(std::fabs(r.best[0] - 37), tolerance(s, 3, 8)) << s << " best " << r.best[0];
}

TEST_P(Strategies, EnumAndStepMixed) {
  const std::string s = GetParam();
  // Chunker-like enum (best "guided") x chunk size in steps of 16 (best 128).
  const double by_enum[] = {0.5, 0.3, 0.0, 0.4};
  auto f = [&](const point& p) {
    return by_enum[static_cast<int>(p[0])] + std::fabs(p[1] - 128.0) / 256.0;
  };
  auto r = run(s,
               {enumeration("chunker", {"static", "dynamic", "guided", "auto"}, 0),
                integer("chunk", 16, 512, 16, 512)},
               f, 0.01);
  EXPECT_LE(r.evaluations, r.budget);
  EXPECT_EQ(r.best[0], 2) << s;
  EXPECT_EQ(std::fmod(r.best[1] - 16, 16), 0);
  EXPECT_LE(std::fabs(r.best[1] - 128), tolerance(s, 32, 96)) << s << " best " << r.best[1];
}

INSTANTIATE_TEST_SUITE_P(All, Strategies, ::testing::ValuesIn(strategy_names()),
                         [](const auto& info) { return info.param; });

TEST(Strategy, UnknownNameListsTheKnownOnes) {
  try {
    make_strategy("gradient", {dbl("x", 0, 1, 0)});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nelder_mead"), std::string::npos);
  }
  EXPECT_THROW(make_strategy("random", {}), std::invalid_argument);
}

TEST(Strategy, ExhaustiveVisitsTheWholeGrid) {
  auto s = make_strategy("exhaustive", {integer("a", 1, 4, 1, 1), enumeration("b", {"x", "y"}, 0)});
  int n = 0;
  while (auto p = s->ask()) {
    ++n;
    s->tell((*p)[0] == 3 && (*p)[1] == 1 ? -1.0 : 1.0);
  }
  EXPECT_EQ(n, 8);
  EXPECT_TRUE(s->converged());
  EXPECT_EQ(s->best(), (point{3, 1}));
}

TEST(Strategy, BudgetIsRespected) {
  grain::policy::tuning::strategy_options o;
  o.budget = 5;
  auto s = make_strategy("random", {dbl("x", 0, 1, 0)}, o);
  int n = 0;
  while (auto p = s->ask()) {
    ++n;
    s->tell((*p)[0]);
  }
  EXPECT_EQ(n, 5);
  EXPECT_FALSE(s->converged());
}

}  // namespace
