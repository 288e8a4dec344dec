// What scripts written for HPX expect: the instance spelling worker-thread#N, and HPX's
// print-counter lines (--grain:print-counter-format=hpx: NAME,N,T,[s],VALUE[,[UNIT]]).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/spin.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"

namespace gi = grain::instrumentation;

namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "grain_hpx_" + std::to_string(::getpid()) + "_" + name;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void some_work() {
  std::vector<grain::future<void>> fs;
  for (int i = 0; i < 200; ++i) fs.push_back(grain::async([] { grain::test::spin_ns(50'000); }));
  for (auto& f : fs) f.get();
}

TEST(HpxHabits, WorkerThreadIsTheWorkerInstance) {
  auto n = gi::parse_counter_name("/threads{locality#0/pool#default/worker-thread#1}/idle-rate");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->instance, "locality#0/pool#default/worker#1");
  EXPECT_EQ(n->full(), "/threads{locality#0/pool#default/worker#1}/idle-rate");
  gi::counter_pattern p("/threads{locality#0/pool#default/worker-thread#*}/count/cumulative");
  EXPECT_TRUE(p.matches("/threads{locality#0/pool#default/worker#3}/count/cumulative"));
  EXPECT_FALSE(p.matches("/threads{locality#0/total}/count/cumulative"));
  // Only the instance is rewritten: a counter named so elsewhere stays as it is.
  n = gi::parse_counter_name("/app/worker-thread#2");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->counter, "worker-thread#2");
}

TEST(HpxHabits, PrintCounterInHpxFormat) {
  const std::string out = temp_path("hpx.txt");
  {
    grain::runtime rt(
        {"--grain:threads=2",
         "--grain:print-counter=/threads{locality#0/pool#default/worker-thread#*}/count/cumulative",
         "--grain:print-counter=/threads/time/average",
         // unavailable without a one-worker calibration: HPX's "invalid"
         "--grain:print-counter=/threads/wait-time-inflation", "--grain:print-counter-format=hpx",
         "--grain:print-counter-interval=20", "--grain:print-counter-destination=" + out},
        false);
    some_work();
    // Periodic prints before the second batch: the sampler prints every 20 ms, later on a loaded
    // machine, so wait for the first one (up to 10 s) rather than for a fixed time.
    grain::test::spin_ns(60'000'000);
    for (int i = 0; i < 500 && lines_of(out).empty(); ++i) grain::test::spin_ns(20'000'000);
    some_work();
  }
  const std::regex line(R"(^(/[^,]+),(\d+),(\d+\.\d{6}),\[s\],([^,]+)(,\[([^\]]+)\])?$)");
  std::map<std::string, std::vector<unsigned>> seq;  // counter -> its sequence numbers
  std::string last_average;                          // the final print's /threads/time/average
  unsigned workers = 0;
  for (const std::string& l : lines_of(out)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << "not an HPX line: " << l;
    const std::string name = m[1];
    seq[name].push_back(static_cast<unsigned>(std::stoul(m[2])));
    if (name.find("/count/cumulative") != std::string::npos) {
      EXPECT_FALSE(m[5].matched) << "a count has no unit in HPX's lines: " << l;
      if (seq[name].size() == 1) ++workers;
    } else if (name == "/threads{locality#0/total}/time/average") {
      // A periodic print before the workers have counted a task says invalid, as HPX's does.
      EXPECT_EQ(m[6], "ns") << l;
      last_average = m[4];
    } else if (name == "/threads{locality#0/total}/wait-time-inflation") {
      EXPECT_EQ(m[4], "invalid") << l;
    }
  }
  EXPECT_EQ(workers, 2u) << "worker-thread#* should select both workers";
  // After 400 tasks of 50 us each the average is known, and printed as a number.
  EXPECT_NE(last_average, "invalid");
  EXPECT_GT(std::atof(last_average.c_str()), 0.0) << last_average;
  ASSERT_FALSE(seq.empty());
  for (auto& [name, s] : seq) {
    ASSERT_GE(s.size(), 2u) << name << ": periodic prints and the final one";
    for (std::size_t i = 0; i < s.size(); ++i) EXPECT_EQ(s[i], i + 1) << name;
  }
  std::remove(out.c_str());
}

TEST(HpxHabits, UnknownFormatNamesHpx) {
  try {
    grain::runtime rt(
        {"--grain:print-counter=/threads/idle-rate", "--grain:print-counter-format=xml"}, false);
    FAIL() << "xml accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("use csv, table or hpx"), std::string::npos) << e.what();
  }
}

}  // namespace
