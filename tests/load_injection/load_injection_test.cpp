// The applications' load-injection library (apps/common/load_injection.hpp):
// each distribution's mean and spread over many draws, reproducibility from Wickramasinghe et al.
// 2017, the fraction of tasks or ranks affected, scaled's single outlier, the checks of bad
// parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <vector>

#include "load_injection.hpp"

namespace load_injection {
namespace {

struct moments {
  double mean = 0, var = 0, min = 1e300;
};

moments draw(const load_spec& s, int iterations, int tasks) {
  std::vector<double> v;
  for (int i = 0; i < iterations; ++i)
    for (int t = 0; t < tasks; ++t)
      v.push_back(units(s, static_cast<std::uint64_t>(i), 0, static_cast<std::uint32_t>(t)));
  moments m;
  for (double x : v) {
    m.mean += x;
    m.min = std::min(m.min, x);
  }
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size() - 1);
  return m;
}

load_spec spec(distribution d, double a, double b = 0) {
  load_spec s;
  s.dist = d;
  s.a = a;
  s.b = b;
  s.tasks_per_rank = 100;
  return s;
}

// 100,000 draws: the standard error of a mean is below 1 % of these spreads.
TEST(LoadInjection, UniformMeanAndVariance) {
  const moments m = draw(spec(distribution::uniform, 1, 3), 1000, 100);
  EXPECT_NEAR(m.mean, 2.0, 0.02);
  EXPECT_NEAR(m.var, 4.0 / 12, 0.01);
  EXPECT_GE(m.min, 1.0);
}

TEST(LoadInjection, GaussianMeanAndSigma) {
  const moments m = draw(spec(distribution::gaussian, 2, 0.5), 1000, 100);
  EXPECT_NEAR(m.mean, 2.0, 0.01);
  EXPECT_NEAR(std::sqrt(m.var), 0.5, 0.01);
}

TEST(LoadInjection, GaussianIsClippedAtZero) {
  const moments m = draw(spec(distribution::gaussian, 0.5, 1), 200, 100);
  EXPECT_GE(m.min, 0.0);
}

TEST(LoadInjection, ExponentialMeanEqualsSigma) {
  const moments m = draw(spec(distribution::exponential, 1.5), 1000, 100);
  EXPECT_NEAR(m.mean, 1.5, 0.03);
  EXPECT_NEAR(std::sqrt(m.var), 1.5, 0.05);
}

TEST(LoadInjection, PoissonIsIntegerWithVarianceEqualMean) {
  for (double mean : {3.0, 100.0}) {
    const moments m = draw(spec(distribution::poisson, mean), 1000, 100);
    EXPECT_NEAR(m.mean, mean, 0.02 * mean);
    EXPECT_NEAR(m.var, mean, 0.05 * mean);
    const double x = units(spec(distribution::poisson, mean), 7, 0, 3);
    EXPECT_EQ(x, std::round(x));
  }
}

TEST(LoadInjection, ScaledHasExactlyOneOutlierPerIterationOverTheJob) {
  load_spec s = spec(distribution::scaled, 2);
  s.ranks = 4;
  s.tasks_per_rank = 8;
  std::set<std::uint32_t> where;
  for (std::uint64_t it = 0; it < 200; ++it) {
    int outliers = 0;
    for (std::uint32_t r = 0; r < 4; ++r)
      for (std::uint32_t t = 0; t < 8; ++t) {
        const double u = units(s, it, r, t);
        if (u == 3.0) {
          ++outliers;
          where.insert(r * 8 + t);
        } else {
          EXPECT_EQ(u, 1.0);
        }
      }
    EXPECT_EQ(outliers, 1) << "iteration " << it;
  }
  EXPECT_GT(where.size(), 16U);  // it moves around
}

TEST(LoadInjection, SameSeedSameDrawsOtherSeedOthers) {
  load_spec a = spec(distribution::exponential, 1), b = a, c = a;
  c.seed = 2;
  int same = 0;
  for (std::uint32_t t = 0; t < 100; ++t) {
    EXPECT_EQ(units(a, 5, 1, t), units(b, 5, 1, t));
    same += units(a, 5, 1, t) == units(c, 5, 1, t);
  }
  EXPECT_LT(same, 5);
  EXPECT_NE(units(a, 5, 1, 0), units(a, 6, 1, 0));  // iterations differ
  EXPECT_NE(units(a, 5, 1, 0), units(a, 5, 2, 0));  // ranks differ
}

TEST(LoadInjection, FractionOfTasks) {
  load_spec s = spec(distribution::uniform, 5, 6);
  s.fraction = 0.25;
  int drawn = 0, n = 0;
  for (std::uint64_t it = 0; it < 400; ++it)
    for (std::uint32_t t = 0; t < 100; ++t, ++n) {
      const double u = units(s, it, 0, t);
      if (u != 1.0) {
        ++drawn;
        EXPECT_GE(u, 5.0);
      }
    }
  EXPECT_NEAR(static_cast<double>(drawn) / n, 0.25, 0.01);
}

TEST(LoadInjection, FractionOfRanksTakesWholeRanks) {
  load_spec s = spec(distribution::uniform, 5, 6);
  s.fraction = 0.5;
  s.per_rank = true;
  int ranks_drawn = 0;
  for (std::uint32_t r = 0; r < 200; ++r) {
    const bool first = units(s, 3, r, 0) != 1.0;
    ranks_drawn += first;
    for (std::uint32_t t = 1; t < 10; ++t) EXPECT_EQ(units(s, 3, r, t) != 1.0, first);
  }
  EXPECT_GT(ranks_drawn, 60);
  EXPECT_LT(ranks_drawn, 140);
}

TEST(LoadInjection, BadParametersAreRefused) {
  EXPECT_THROW(check(spec(distribution::uniform, 3, 1)), std::invalid_argument);
  EXPECT_THROW(check(spec(distribution::exponential, 0)), std::invalid_argument);
  EXPECT_THROW(check(spec(distribution::poisson, -1)), std::invalid_argument);
  load_spec s = spec(distribution::uniform, 1, 1);
  s.fraction = 1.5;
  EXPECT_THROW(check(s), std::invalid_argument);
  s.fraction = 1;
  s.unit_us = 0;
  EXPECT_THROW(check(s), std::invalid_argument);
  EXPECT_NO_THROW(check(spec(distribution::gaussian, 1, 0.5)));
  EXPECT_FALSE(distribution_from_name("cauchy"));
  EXPECT_EQ(distribution_from_name("poisson"), distribution::poisson);
}

TEST(LoadInjection, SpinScalesWithTheAmount) {
  // Work, not time: the calibration is given, so the spin's iteration count is exact; only
  // check that the computation depends on the amount (no timing here).
  set_iterations_per_us(10);
  EXPECT_NE(spin_us(100), spin_us(200));
  EXPECT_EQ(spin_us(100), spin_us(100));
  EXPECT_EQ(spin_us(0), 0U);
}

}  // namespace
}  // namespace load_injection
