// Per-interval values: --grain:reset-counters after each print, grain.reset_counters() from a
// policy, and --grain:print-counter-at.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/spin.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"

using namespace std::chrono_literals;
namespace gi = grain::instrumentation;

namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "grain_reset_" + std::to_string(::getpid()) + "_" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The values of `counter` in a --grain:print-counter CSV file, in print order.
std::vector<double> csv_values(const std::string& text, const std::string& counter) {
  std::vector<double> out;
  std::istringstream in(text);
  const std::string key = ",\"" + counter + "\",";
  for (std::string line; std::getline(in, line);)
    if (auto p = line.find(key); p != std::string::npos)
      out.push_back(std::stod(line.substr(p + key.size())));
  return out;
}

void run_tasks(int n) {
  std::vector<grain::future<void>> fs;
  for (int i = 0; i < n; ++i) fs.push_back(grain::async([] { grain::test::spin_ns(20'000); }));
  for (auto& f : fs) f.get();
}

}  // namespace

TEST(ResetCounters, PrintedIntervalsAddUpToTheRun) {
  const std::string csv = temp_path("intervals.csv");
  const int batches = 10, per_batch = 200;
  {
    grain::runtime rt({"--grain:threads=2", "--grain:print-counter=/threads/count/cumulative",
                       "--grain:print-counter-interval=10", "--grain:reset-counters",
                       "--grain:print-counter-destination=" + csv},
                      false);
    for (int b = 0; b < batches; ++b) {
      run_tasks(per_batch);
      std::this_thread::sleep_for(15ms);
    }
  }
  const std::string text = slurp(csv);
  const auto v = csv_values(text, "/threads{locality#0/total}/count/cumulative");
  ASSERT_GE(v.size(), 3u) << text;
  double sum = 0, largest = 0;
  for (double x : v) {
    sum += x;
    largest = std::max(largest, x);
  }
  // Each print holds its interval only (not the running total), and none is lost.
  EXPECT_EQ(sum, batches * per_batch) << text.substr(0, 3000);
  EXPECT_LT(largest, batches * per_batch) << text.substr(0, 3000);
  std::remove(csv.c_str());
}

TEST(ResetCounters, PrintCounterAtStartAndStop) {
  const std::string out = temp_path("at.txt");
  auto run = [&](const std::string& at) {
    grain::runtime rt({"--grain:threads=1", "--grain:print-counter=/threads/count/cumulative",
                       "--grain:print-counter-format=table", "--grain:print-counter-at=" + at,
                       "--grain:print-counter-destination=" + out},
                      false);
    run_tasks(10);
  };
  run("start,stop");
  std::string text = slurp(out);
  EXPECT_NE(text.find("(start)"), std::string::npos) << text;
  EXPECT_NE(text.find("(final)"), std::string::npos) << text;
  run("start");
  text = slurp(out);
  EXPECT_NE(text.find("(start)"), std::string::npos) << text;
  EXPECT_EQ(text.find("(final)"), std::string::npos) << text;
  run("shutdown");  // HPX's name for the same point
  text = slurp(out);
  EXPECT_EQ(text.find("(start)"), std::string::npos) << text;
  EXPECT_NE(text.find("(final)"), std::string::npos) << text;
  std::remove(out.c_str());

  EXPECT_THROW(grain::runtime({"--grain:threads=1", "--grain:print-counter=/threads/idle-rate",
                               "--grain:print-counter-at=exit"},
                              false),
               grain::option_error);
  EXPECT_THROW(grain::runtime({"--grain:threads=1", "--grain:print-counter=/threads/idle-rate",
                               "--grain:print-counter-at=none"},
                              false),
               grain::option_error)
      << "none without an interval prints nothing";
}

TEST(ResetCounters, FromALuaPolicy) {
  const std::string policy = temp_path("reset.lua");
  std::ofstream(policy) << R"(
grain.on("sample", function(s)
  local go = grain.counter("/app/test-reset-now")
  if go == 1 and grain.knob("test.reset.done"):get() == 0 then
    grain.reset_counters()
    grain.knob("test.reset.done"):set(1, "counters reset")
  end
end, "reset")
)";
  grain::knob& done = grain::knobs().define_double("test.reset.done", 0, 1, 0, "reset done");
  done.set(0, "test");
  grain::sample_value("/app/test-reset-now", 0);  // application counters outlive a runtime
  grain::runtime rt({"--grain:threads=2", "--grain:sample-interval=5", "--grain:policy=" + policy},
                    false);
  run_tasks(500);
  for (int i = 0; i < 2000 && gi::registry().value("/threads/count/cumulative")->value < 500; ++i)
    std::this_thread::sleep_for(1ms);
  ASSERT_EQ(gi::registry().value("/threads/count/cumulative")->value, 500);
  grain::sample_value("/app/test-reset-now", 1);
  for (int i = 0; i < 2000 && done.value() == 0; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(done.value(), 1) << "the policy did not reset";
  EXPECT_EQ(gi::registry().value("/threads/count/cumulative")->value, 0);
  run_tasks(7);
  for (int i = 0; i < 2000 && gi::registry().value("/threads/count/cumulative")->value < 7; ++i)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(gi::registry().value("/threads/count/cumulative")->value, 7);
  rt.stop();
  std::remove(policy.c_str());
}
