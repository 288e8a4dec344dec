// Counters account for the task phase in progress: a worker inside one long task is busy
// now, not only once the task ends; and readings never count a phase twice.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "common/counter.hpp"
#include "common/spin.hpp"
#include "grain/clock.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"

using namespace std::chrono_literals;
namespace gi = grain::instrumentation;

namespace {

const std::string worker0 = "/threads{locality#0/pool#default/worker#0}/";

using grain::test::counter;

}  // namespace

TEST(PhaseInProgress, LongTaskIsBusyWhileItRuns) {
  grain::runtime rt({"--grain:threads=1", "--grain:sample-interval=0"}, false);
  std::atomic<bool> started{false}, release{false};
  auto f = grain::async([&] {
    started.store(true);
    while (!release.load(std::memory_order_relaxed)) {
    }
  });
  while (!started.load()) std::this_thread::sleep_for(1ms);
  grain::counters::reset();
  // One task of about 1 s, sampled every 50 ms: its worker is busy all the time.
  double last = 0;
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(50ms);
    const double overall = counter(worker0 + "time/overall");
    const double exec = counter(worker0 + "time/cumulative");
    const double ir = counter(worker0 + "idle-rate");
    EXPECT_GT(overall, last) << "time/overall froze at sample " << i;
    EXPECT_GT(exec, 0.0) << "sample " << i;
    EXPECT_LT(ir, 0.01) << "sample " << i;
    last = overall;
  }
  release.store(true);
  f.get();
  EXPECT_GE(counter(worker0 + "time/overall"), last);
}

TEST(PhaseInProgress, ReadingsAreMonotonicAndNeverCountAPhaseTwice) {
  grain::runtime rt({"--grain:threads=2", "--grain:sample-interval=0"}, false);
  // Many short phases: reads land just before, inside and just after phase ends.
  const int n = 3000;
  std::atomic<int> done{0};
  std::vector<grain::future<void>> fs;
  for (int i = 0; i < n; ++i)
    fs.push_back(grain::async([&done] {
      grain::test::spin_ns(50'000);
      done.fetch_add(1);
    }));
  const std::uint64_t t0 = grain::now_ns();
  grain::counters::reset();
  std::vector<double> last_overall(2, 0), last_exec(2, 0);
  int reads = 0;
  for (bool busy = true; busy; ++reads) {
    busy = reads < 20000 && done.load() < n;
    // One query: a worker's overall and exec come from the same reading.
    double overall[2] = {-1, -1}, exec[2] = {-1, -1};
    for (auto& v : gi::registry().query("/threads{locality#0/pool#default/worker#*}/time/*")) {
      const std::size_t w = v.name.find("worker#1") != std::string::npos ? 1 : 0;
      if (v.name.ends_with("/time/overall")) overall[w] = v.value;
      if (v.name.ends_with("/time/cumulative")) exec[w] = v.value;
    }
    // Taken after the reads: a worker cannot have spent more than this in its loop.
    const double wall = static_cast<double>(grain::now_ns() - t0);
    for (std::size_t w = 0; w < 2; ++w) {
      EXPECT_GE(exec[w], 0) << "worker " << w;
      EXPECT_GE(overall[w], last_overall[w]) << "worker " << w;
      EXPECT_GE(exec[w], last_exec[w]) << "worker " << w;
      EXPECT_LE(overall[w], wall) << "worker " << w << " counted a phase twice";
      EXPECT_LE(exec[w], overall[w]) << "worker " << w;
      last_overall[w] = overall[w];
      last_exec[w] = exec[w];
    }
    if (::testing::Test::HasFailure()) break;
  }
  for (auto& f : fs) f.get();
  EXPECT_GT(reads, 10);
}
