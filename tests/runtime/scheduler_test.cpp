#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "asymmetric_fence.hpp"
#include "grain/async.hpp"
#include "grain/lcos/latch.hpp"
#include "grain/this_task.hpp"
#include "grain/when_all.hpp"
#include "runtime_fixture.hpp"

using namespace std::chrono_literals;
using grain::test::start_runtime;

namespace {

long spawn_tree(int depth, int fanout) {
  if (depth == 0) return 1;
  std::vector<grain::future<long>> kids;
  kids.reserve(static_cast<std::size_t>(fanout));
  for (int i = 0; i < fanout; ++i) kids.push_back(grain::async(spawn_tree, depth - 1, fanout));
  long sum = 0;
  for (auto& k : kids) sum += k.get();
  return sum;
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

TEST(SchedulerTest, TenMillionTasksStress) {
  auto rt = start_runtime();
  // 10^7 leaves of a 10-ary tree, every node a task: 11,111,111 tasks.
  EXPECT_EQ(grain::async(spawn_tree, 7, 10).get(), 10000000);
  rt->stop();  // the root's worker counts it just after get() returned: read final values
  std::uint64_t tasks = 0;
  for (unsigned w = 0; w < rt->num_workers(); ++w) tasks += rt->stats(w).tasks.get();
  EXPECT_GE(tasks, 11111111u);
}

TEST(SchedulerTest, NamedPoolsRunTheirOwnTasks) {
  auto rt = start_runtime({"--grain:threads=2", "--grain:pools=critical:1"});
  ASSERT_EQ(rt->pools().size(), 2u);
  EXPECT_EQ(rt->pools()[0].name, "critical");
  EXPECT_EQ(rt->pools()[1].name, "default");
  grain::executor critical("critical", grain::priority::high);
  const unsigned critical_worker = rt->pools()[0].workers.at(0);
  std::vector<grain::future<int>> v;
  for (int i = 0; i < 200; ++i)
    v.push_back(grain::async(critical, [] { return grain::this_task::worker_index(); }));
  for (auto& f : v) EXPECT_EQ(f.get(), static_cast<int>(critical_worker));
  // Cross-pool wait: a default-pool task waits for a critical-pool task and vice versa.
  auto cross = grain::async([critical] {
    return grain::async(critical,
                        [] { return grain::async(grain::executor{}, [] { return 5; }).get(); })
        .get();
  });
  EXPECT_EQ(cross.get(), 5);
  EXPECT_THROW(grain::executor("nope"), std::invalid_argument);
}

TEST(SchedulerTest, PriorityHighRunsBeforeLow) {
  auto rt = start_runtime({"--grain:threads=1"});
  std::vector<int> order;
  // Occupy the only worker (spinning, not suspended) while both kinds are queued.
  std::atomic<bool> release{false}, started{false};
  auto blocker = grain::async([&] {
    started = true;
    while (!release.load()) std::this_thread::yield();
  });
  while (!started.load()) std::this_thread::yield();
  std::vector<grain::future<void>> v;
  for (int i = 0; i < 5; ++i)
    v.push_back(
        grain::async(grain::executor(grain::priority::low), [&, i] { order.push_back(100 + i); }));
  for (int i = 0; i < 5; ++i)
    v.push_back(
        grain::async(grain::executor(grain::priority::high), [&, i] { order.push_back(i); }));
  release = true;
  for (auto& f : v) f.get();
  blocker.get();
  ASSERT_EQ(order.size(), 10u);
  for (int i = 0; i < 5; ++i)
    EXPECT_LT(order[static_cast<std::size_t>(i)], 100) << "position " << i;
}

TEST(SchedulerTest, ElasticPoolShrinksAndGrowsUnderLoad) {
  auto rt = start_runtime({"--grain:threads=2"});
  std::atomic<bool> stop{false};
  std::atomic<long> done{0};
  auto load = grain::async([&] {
    std::vector<grain::future<void>> v;
    while (!stop.load()) {
      for (int i = 0; i < 100; ++i) v.push_back(grain::async([&] { done++; }));
      for (auto& f : v) f.get();
      v.clear();
    }
  });
  for (int round = 0; round < 5; ++round) {
    rt->set_active_workers(0, 1);
    EXPECT_EQ(rt->active_workers(0), 1u);
    long before = done.load();
    // Work goes on with one worker. Progress, not speed, is the point: on a loaded machine
    // this process may not run at all for tens of milliseconds, so wait up to 2 s for it.
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    while (done.load() <= before && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    EXPECT_GT(done.load(), before);
    rt->set_active_workers(0, 2);
    std::this_thread::sleep_for(10ms);
  }
  stop = true;
  load.get();
  EXPECT_THROW(rt->set_active_workers(0, 0), std::out_of_range);
  EXPECT_THROW(rt->set_active_workers(0, 3), std::out_of_range);
  // Shrunk to one: every task still runs (none stranded in the sleeping worker's queues).
  rt->set_active_workers(0, 1);
  EXPECT_EQ(spawn_tree(4, 6), 1296);
  rt->set_active_workers(0, 2);
}

TEST(SchedulerTest, IdleRuntimeSleeps) {
  auto rt = start_runtime({"--grain:threads=2"});
  grain::async([] { return 1; }).get();
  std::this_thread::sleep_for(50ms);  // let the workers fall asleep
  double c0 = process_cpu_seconds();
  std::this_thread::sleep_for(300ms);
  double used = process_cpu_seconds() - c0;
  EXPECT_LT(used, 0.03) << "idle workers should sleep, not spin";
  // And new work wakes them at once.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(grain::async([] { return 2; }).get(), 2);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms);
}

TEST(SchedulerTest, ExceptionsEverywhere) {
  auto rt = start_runtime();
  std::vector<grain::future<int>> v;
  for (int i = 0; i < 1000; ++i)
    v.push_back(grain::async([i]() -> int {
      if (i % 3 == 0) throw std::runtime_error("task " + std::to_string(i));
      return i;
    }));
  int thrown = 0;
  for (auto& f : v) {
    try {
      (void)f.get();
    } catch (const std::runtime_error&) {
      ++thrown;
    }
  }
  EXPECT_EQ(thrown, 334);
  auto then_throw = grain::async([] { return 1; }).then([](grain::future<int>) -> int {
    throw std::logic_error("then");
  });
  EXPECT_THROW(then_throw.get(), std::logic_error);
}

// --grain:fences chooses how pops and steals fence each other; a bad value is refused at start.
TEST(SchedulerTest, FencesOptionChoosesTheModeAndRefusesOthers) {
  using grain::detail::fence_mode;
  EXPECT_THROW(start_runtime({"--grain:fences=sometimes"}), grain::option_error);
  for (const char* name : {"symmetric", "adaptive", "asymmetric"}) {
    auto rt = start_runtime({"--grain:threads=2", std::string("--grain:fences=") + name});
    // A spawn storm that the second worker steals from.
    const long sum = grain::async([] {
                       long s = 0;
                       for (int round = 0; round < 200; ++round) {
                         std::vector<grain::future<long>> f;
                         for (long i = 0; i < 100; ++i)
                           f.push_back(grain::async([i] { return i; }));
                         for (auto& x : f) s += x.get();
                       }
                       return s;
                     }).get();
    EXPECT_EQ(sum, 200 * 4950);
    const fence_mode now = grain::detail::g_fence_mode;
    rt->stop();
    std::uint64_t heavy = 0, stolen = 0;
    for (unsigned w = 0; w < rt->num_workers(); ++w) {
      heavy += rt->stats(w).heavy_steals.get();
      stolen += rt->stats(w).stolen_to.get();
    }
    // Without membarrier every mode falls back to symmetric.
    EXPECT_TRUE(std::string(grain::detail::fence_mode_name(now)) == name ||
                now == fence_mode::symmetric)
        << name << " gave " << grain::detail::fence_mode_name(now);
    // /threads/count/heavy-steals: none when symmetric; every steal when asymmetric.
    if (now == fence_mode::symmetric) {
      EXPECT_EQ(heavy, 0u);
    } else if (now == fence_mode::asymmetric) {
      EXPECT_GE(heavy, stolen);
    }
  }
  { auto rt = start_runtime({"--grain:threads=2", "--grain:fences=symmetric"}); }
  if (std::getenv("GRAIN_ASYMMETRIC_FENCES")) return;  // the older variable decides then
  auto rt = start_runtime({"--grain:threads=2"});
  EXPECT_EQ(grain::detail::requested_fence_mode(), fence_mode::adaptive)
      << "a runtime without the option kept the last runtime's choice";
}

TEST(SchedulerTest, UnknownOptionListsValidOnes) {
  try {
    start_runtime({"--grain:thread=2"});
    FAIL() << "expected option_error";
  } catch (const grain::option_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("unknown option --grain:thread"), std::string::npos);
    EXPECT_NE(msg.find("--grain:threads"), std::string::npos);
  }
  EXPECT_THROW(start_runtime({"--grain:threads=0"}), grain::option_error);
  EXPECT_THROW(start_runtime({"--grain:pools=critical:2", "--grain:threads=2"}),
               grain::option_error);
  EXPECT_THROW(start_runtime({"--grain:bind=diagonal"}), grain::option_error);
  EXPECT_THROW(start_runtime({"--grain:stack-size=1K"}), grain::option_error);
  // (2^44 + 1) MiB wraps to exactly 1 MiB in 64 bits: refused, not taken as 1M.
  EXPECT_THROW(start_runtime({"--grain:stack-size=17592186044417M"}), grain::option_error);
  EXPECT_THROW(start_runtime({"--grain:log-level=loud"}), grain::option_error);
  // Still usable afterwards.
  auto rt = start_runtime();
  EXPECT_EQ(grain::async([] { return 1; }).get(), 1);
}

TEST(SchedulerTest, AsyncWithoutRuntimeIsAClearError) {
  try {
    (void)grain::async([] { return 1; });
    FAIL();
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("no runtime is running"), std::string::npos);
  }
  // Deferred and sync work without a runtime, like std::async.
  EXPECT_EQ(grain::async(grain::launch::deferred, [] { return 3; }).get(), 3);
  EXPECT_EQ(grain::async(grain::launch::async | grain::launch::deferred, [] { return 4; }).get(),
            4);
}

namespace {
int recurse(int n) {
  volatile char pad[1024];
  pad[0] = static_cast<char>(n);
  return n == 0 ? pad[0] : recurse(n - 1) + pad[0];
}
}  // namespace

TEST(SchedulerDeathTest, StackOverflowIsReportedAsSuch) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto rt = start_runtime({"--grain:threads=1", "--grain:stack-size=64K"});
        grain::async([] { return recurse(1000000); }).get();
      },
      "stack overflow in task");
}
