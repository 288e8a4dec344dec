// t_d1 calibration (seed 000, Eq. 5-6): a one-worker run saves it, later runs read it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

#include "grain/clock.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"

namespace gi = grain::instrumentation;

namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "grain_cal_" + std::to_string(::getpid()) + "_" + name;
}

void run_tasks(int n, std::uint64_t ns) {
  grain::latch done(n);
  std::vector<grain::future<void>> fs;
  for (int i = 0; i < n; ++i)
    fs.push_back(grain::async([ns, &done] {
      const auto t0 = grain::now_ns();
      while (grain::now_ns() - t0 < ns) {
      }
      done.count_down();
    }));
  done.wait();
  for (auto& f : fs) f.get();
}

}  // namespace

TEST(Calibration, SaveOnOneWorkerThenMeasureWaitTimeInflation) {
  const std::string file = temp_path("calibration.json");
  std::remove(file.c_str());
  {
    grain::runtime rt(
        {"--grain:threads=1", "--grain:save-calibration=" + file, "--grain:app-name=other-app"},
        false);
    run_tasks(50, 20'000);
  }
  {
    grain::runtime rt(
        {"--grain:threads=1", "--grain:save-calibration=" + file, "--grain:app-name=caltest"},
        false);
    run_tasks(500, 50'000);
  }
  {
    grain::runtime rt(
        {"--grain:threads=2", "--grain:calibration=" + file, "--grain:app-name=caltest"}, false);
    grain::counters::reset();
    run_tasks(1000, 50'000);
    for (int i = 0; i < 100 && gi::registry().value("/threads/count/cumulative")->value < 1000; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto tw = gi::registry().value("/threads/wait-time-inflation");
    auto Tw = gi::registry().value("/threads/wait-time-inflation-per-core");
    auto td = gi::registry().value("/threads/time/average");
    ASSERT_TRUE(tw && Tw && td);
    ASSERT_TRUE(tw->available);
    ASSERT_TRUE(Tw->available);
    // Same task on one and on two workers: t_w is small against t_d (about 50 us).
    EXPECT_LT(std::fabs(tw->value), 5'000) << "t_w = " << tw->value << " ns";
    const double n = gi::registry().value("/threads/count/cumulative")->value;
    EXPECT_NEAR(Tw->value, tw->value * n / 2, 1e-6 * std::fabs(tw->value * n) + 1);
    std::printf("t_d = %.0f ns, t_w = %.0f ns, T_w = %.0f ns\n", td->value, tw->value, Tw->value);
  }
  // Both applications are in the file.
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("\"other-app\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"caltest\""), std::string::npos) << text;
  EXPECT_NE(text.find("grain-calibration"), std::string::npos) << text;
}

TEST(Calibration, WithoutCalibrationTheCountersAreUnavailable) {
  const std::string file = temp_path("calibration2.json");
  std::remove(file.c_str());
  {
    grain::runtime rt({"--grain:threads=2"}, false);
    run_tasks(100, 1'000);
    EXPECT_FALSE(gi::registry().value("/threads/wait-time-inflation")->available);
    EXPECT_FALSE(gi::registry().value("/threads/wait-time-inflation-per-core")->available);
  }
  {
    grain::runtime rt(
        {"--grain:threads=1", "--grain:save-calibration=" + file, "--grain:app-name=someone-else"},
        false);
    run_tasks(10, 1'000);
  }
  {
    // A file without an entry for this application: warning, counters unavailable.
    grain::runtime rt(
        {"--grain:threads=2", "--grain:calibration=" + file, "--grain:app-name=not-in-file"},
        false);
    run_tasks(100, 1'000);
    EXPECT_FALSE(gi::registry().value("/threads/wait-time-inflation")->available);
  }
}

TEST(Calibration, BadUseIsAnOptionError) {
  EXPECT_THROW(grain::runtime({"--grain:threads=2", "--grain:save-calibration=x.json"}, false),
               grain::option_error);
  EXPECT_THROW(
      grain::runtime({"--grain:threads=1", "--grain:calibration=/nonexistent/cal.json"}, false),
      grain::option_error);
  const std::string bad = temp_path("bad.json");
  std::ofstream(bad) << "{\"format\": \"something else\"}";
  EXPECT_THROW(grain::runtime({"--grain:threads=1", "--grain:calibration=" + bad}, false),
               grain::option_error);
  std::ofstream(bad) << "{not json";
  EXPECT_THROW(grain::runtime({"--grain:threads=1", "--grain:calibration=" + bad}, false),
               grain::option_error);
}
