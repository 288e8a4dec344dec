// std drop-in (issue 19, item 5): programs written for std::async, std::mutex and
// std::this_thread compile and give the same results after renaming std:: to grain::, also
// those with ~40 KB stack frames and those whose tasks wait by sleeping or yielding; and
// grain::this_thread's sleep and yield give the worker up (tasks are not time-sliced), which
// std::this_thread's cannot.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "grain/async.hpp"
#include "grain/detail/config.hpp"
#include "grain/future.hpp"
#include "grain/lcos/mutex.hpp"
#include "grain/this_thread.hpp"
#include "runtime_fixture.hpp"

using grain::test::start_runtime;

namespace {

// A frame of ~40 KB, as the third-party program that crashed under the old 64 KiB stacks.
GRAIN_NOINLINE long big_frame(int depth) {
  volatile char rows[40 * 1024];
  rows[0] = static_cast<char>(depth);
  rows[sizeof rows - 1] = 1;
  return depth == 0 ? rows[0] : big_frame(depth - 1) + rows[0];
}

// Dining philosophers who eat by sleeping while they hold both forks and think by yielding:
// the shape of the program that ran 2.6-2.8x slower than on OS threads when its tasks spun on
// the wall clock. Returns the meals eaten (philosophers x meals) and the big-frame sums.
#define DINING_PROGRAM(NS)                                                  \
  [] {                                                                      \
    constexpr int philosophers = 5, meals = 12;                             \
    std::array<NS::mutex, philosophers> forks;                              \
    std::atomic<long> eaten{0};                                             \
    std::vector<NS::future<long>> table;                                    \
    table.reserve(philosophers);                                            \
    for (int p = 0; p < philosophers; ++p)                                  \
      table.push_back(NS::async(NS::launch::async, [&, p] {                 \
        long frames = big_frame(3);                                         \
        for (int m = 0; m < meals; ++m) {                                   \
          {                                                                 \
            std::scoped_lock both(forks[p], forks[(p + 1) % philosophers]); \
            NS::this_thread::sleep_for(std::chrono::microseconds(200));     \
            eaten.fetch_add(1);                                             \
          }                                                                 \
          NS::this_thread::yield();                                         \
        }                                                                   \
        return frames;                                                      \
      }));                                                                  \
    long frames = 0;                                                        \
    for (auto& f : table) frames += f.get();                                \
    return eaten.load() * 1000 + frames;                                    \
  }()

TEST(StdDropIn, DiningPhilosophersWithLargeFramesGiveTheSameResult) {
  auto rt = start_runtime({"--grain:threads=2"});
  const long with_std = DINING_PROGRAM(std);
  const long with_grain = DINING_PROGRAM(grain);
  EXPECT_EQ(with_std, 5L * 12 * 1000 + 5 * big_frame(3));
  EXPECT_EQ(with_grain, with_std);
}

// One worker: a task that sleeps gives the worker to a task it started, which therefore has
// run when the sleeper wakes. A sleep that held the OS thread would find it not run yet.
TEST(StdDropIn, SleepForSuspendsTheTaskAndFreesTheWorker) {
  auto rt = start_runtime({"--grain:threads=1"});
  const bool ran_during_sleep = grain::async([] {
                                  std::atomic<bool> ran{false};
                                  auto other = grain::async([&] { ran = true; });
                                  grain::this_thread::sleep_for(std::chrono::milliseconds(20));
                                  const bool seen = ran.load();
                                  other.get();
                                  return seen;
                                }).get();
  EXPECT_TRUE(ran_during_sleep);
}

// One worker: a task that waits for another by yielding (a spin-wait with a yield, as ported
// std code does) lets it run. With std::this_thread::yield the worker would spin forever; the
// bound turns that into a failure.
TEST(StdDropIn, YieldLetsTheTaskItWaitsForRun) {
  auto rt = start_runtime({"--grain:threads=1"});
  const long yields = grain::async([] {
                        std::atomic<bool> done{false};
                        auto other = grain::async([&] { done = true; });
                        long n = 0;
                        while (!done.load() && n < 1000000) {
                          grain::this_thread::yield();
                          ++n;
                        }
                        other.get();
                        return n;
                      }).get();
  EXPECT_LT(yields, 1000000) << "the other task never ran while this one yielded";
}

TEST(StdDropIn, ThisThreadOutsideTasksIsStdThisThread) {
  auto rt = start_runtime({"--grain:threads=1"});
  EXPECT_EQ(grain::this_thread::get_id(), std::this_thread::get_id());
  const auto t0 = std::chrono::steady_clock::now();
  grain::this_thread::sleep_for(std::chrono::milliseconds(5));
  grain::this_thread::sleep_for(std::chrono::milliseconds(-5));  // returns at once, as std's
  grain::this_thread::yield();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(5));
  // In a task: the worker's OS thread, not the main thread.
  const auto in_task = grain::async([] { return grain::this_thread::get_id(); }).get();
  EXPECT_NE(in_task, std::this_thread::get_id());
}

}  // namespace
