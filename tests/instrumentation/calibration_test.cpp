// t_d1 calibration (docs/counters.md, Eq. 5-6): a one-worker run saves it, later runs read it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "common/spin.hpp"
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
      grain::test::spin_ns(ns);
      done.count_down();
    }));
  done.wait();
  for (auto& f : fs) f.get();
}

double read_td1(const std::string& file, const std::string& app) {
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::string key = "\"" + app + "\": {\"t_d1_ns\": ";
  auto p = text.find(key);
  if (p == std::string::npos) return NAN;
  return std::strtod(text.c_str() + p + key.size(), nullptr);
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
    // One evaluation of all /threads counters of the locality: they are mutually consistent.
    double tw = NAN, Tw = NAN, td = NAN, n = NAN;
    for (auto& v : gi::registry().query("/threads/*")) {
      if (v.name.ends_with("}/wait-time-inflation")) {
        ASSERT_TRUE(v.available);
        tw = v.value;
      } else if (v.name.ends_with("}/wait-time-inflation-per-core")) {
        ASSERT_TRUE(v.available);
        Tw = v.value;
      } else if (v.name.ends_with("}/time/average")) {
        td = v.value;
      } else if (v.name.ends_with("}/count/cumulative")) {
        n = v.value;
      }
    }
    // Eq. 5 and 6 against the t_d1 in the file.
    const double td1 = read_td1(file, "caltest");
    EXPECT_GT(td1, 45'000);
    EXPECT_NEAR(tw, td - td1, 1e-9 * td);
    EXPECT_NEAR(Tw, tw * n / 2, 1e-9 * std::fabs(tw * n) + 1e-6);
    // The size of t_w itself depends on the machine: the same 50 us task on two workers is
    // about as long as on one on a quiet machine (|t_w| < 1 us measured), but another process
    // taking a core from a busy-waiting worker inflates it (t_w = +36 us seen on this shared
    // VM). Only its consistency with Eq. 5-6 is checked.
    std::printf("t_d1 = %.0f ns, t_d = %.0f ns, t_w = %.0f ns, T_w = %.0f ns\n", td1, td, tw, Tw);
  }
  // Both applications are in the file.
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("\"other-app\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"caltest\""), std::string::npos) << text;
  EXPECT_NE(text.find("grain-calibration"), std::string::npos) << text;
  std::remove(file.c_str());
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
  std::remove(file.c_str());
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
  std::remove(bad.c_str());
}
