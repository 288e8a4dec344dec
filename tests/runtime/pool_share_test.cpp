// pool.<name>.share (runtime/src/pool_share.cpp): workers move between the critical and the
// default pool while both are loaded — every task still runs, and only on a worker serving its
// own pool; nothing stalls; workers go home when the share comes back.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "grain/async.hpp"
#include "grain/knob.hpp"
#include "grain/this_task.hpp"
#include "runtime_fixture.hpp"

namespace {

using grain::test::start_runtime;
using namespace std::chrono_literals;

struct observations {
  std::atomic<long> wrong_pool{0};  // a task ran on a worker serving another pool
  std::atomic<long> away{0};        // a task ran on a worker away from its own pool
  std::atomic<long> tasks{0};
};

void spin_for(std::chrono::microseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Checks where it runs, spawns children into its own pool (the default executor: they sit in
// this worker's deque when it is asked to move) and now and then waits for a task of the other
// pool (a suspended user thread that must come back to this pool).
long checked_task(grain::runtime_core* rt, observations* obs, unsigned pool,
                  const grain::executor* other, int depth) {
  const auto w = static_cast<unsigned>(grain::this_task::worker_index());
  if (rt->pool_of(w) != pool) obs->wrong_pool.fetch_add(1);
  bool own = false;
  for (unsigned id : rt->pools()[pool].workers) own = own || id == w;
  if (!own) obs->away.fetch_add(1);
  obs->tasks.fetch_add(1);
  spin_for(20us);
  long n = 1;
  if (depth > 0) {
    auto a = grain::async(checked_task, rt, obs, pool, other, depth - 1);
    auto b = grain::async(checked_task, rt, obs, pool, other, depth - 1);
    if (depth == 2) n += grain::async(*other, [] { return 0L; }).get();
    n += a.get() + b.get();
  }
  return n;
}

TEST(PoolShare, WorkersMoveUnderLoadAndNoTaskIsLostOrRunsInTheWrongPool) {
  auto rt = start_runtime({"--grain:threads=4", "--grain:pools=critical:2"});
  grain::knob& share = grain::knobs().at("pool.critical.share");
  EXPECT_EQ(share.min(), 1);
  EXPECT_EQ(share.max(), 3);
  EXPECT_EQ(share.value(), 2);
  const grain::executor crit("critical"), def("default");
  const unsigned pc = static_cast<unsigned>(rt->pool_index("critical"));
  const unsigned pd = static_cast<unsigned>(rt->pool_index("default"));
  observations obs;
  std::atomic<bool> done{false};
  std::atomic<int> moves{0};
  std::thread mover([&] {
    const int cycle[] = {1, 3, 2, 3, 1};
    for (int i = 0; !done.load(); ++i) {
      share.set(cycle[i % 5], "test");
      moves.fetch_add(1);
      std::this_thread::sleep_for(1ms);
    }
  });
  // 40 roots per pool, each a tree of 7 tasks of >= 20 us: about 3 ms of work per worker per
  // round, 20 rounds, the share changing every millisecond.
  long expected = 0, got = 0;
  for (int round = 0; round < 20; ++round) {
    std::vector<grain::future<long>> roots;
    for (int i = 0; i < 40; ++i) {
      roots.push_back(grain::async(crit, checked_task, rt.get(), &obs, pc, &def, 2));
      roots.push_back(grain::async(def, checked_task, rt.get(), &obs, pd, &crit, 2));
      expected += 14;
    }
    for (auto& f : roots) {
      ASSERT_EQ(f.wait_for(30s), grain::future_status::ready) << "a task stalled";
      got += f.get();
    }
  }
  done = true;
  mover.join();
  EXPECT_EQ(got, expected);
  EXPECT_EQ(obs.tasks.load(), expected);
  EXPECT_EQ(obs.wrong_pool.load(), 0);
  EXPECT_GT(moves.load(), 2);
  EXPECT_GT(obs.away.load(), 0) << "no task ran on a moved worker: the share did not move any";

  // Back to the configured split: every worker goes home, idle ones too.
  share.set(2, "test");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  auto all_home = [&] {
    for (unsigned p = 0; p < rt->pools().size(); ++p)
      for (unsigned w : rt->pools()[p].workers)
        if (rt->pool_of(w) != p) return false;
    return true;
  };
  while (!all_home() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(all_home());
}

TEST(PoolShare, EachPoolKeepsOneWorkerOfItsOwn) {
  auto rt = start_runtime({"--grain:threads=4", "--grain:pools=critical:2"});
  grain::knob& share = grain::knobs().at("pool.critical.share");
  const unsigned pc = static_cast<unsigned>(rt->pool_index("critical"));
  const unsigned pd = static_cast<unsigned>(rt->pool_index("default"));
  auto serving = [&](unsigned p) {
    unsigned n = 0;
    for (unsigned w = 0; w < rt->num_workers(); ++w) n += rt->pool_of(w) == p ? 1 : 0;
    return n;
  };
  auto wait_for_split = [&](unsigned c) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (serving(pc) != c && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    return serving(pc);
  };
  share.set(3, "test");
  EXPECT_EQ(wait_for_split(3), 3u);
  EXPECT_EQ(rt->pool_of(rt->pools()[pd].workers.at(0)), pd) << "default's first worker stays";
  // Tasks of both pools still run: the default pool has one worker left.
  EXPECT_EQ(grain::async(grain::executor("default"), [] { return 7; }).get(), 7);
  EXPECT_EQ(grain::async(grain::executor("critical"), [] { return 8; }).get(), 8);
  share.set(0, "test");  // clamped to 1
  EXPECT_EQ(share.value(), 1);
  EXPECT_EQ(wait_for_split(1), 1u);
  EXPECT_EQ(rt->pool_of(rt->pools()[pc].workers.at(0)), pc) << "critical's first worker stays";
  EXPECT_EQ(grain::async(grain::executor("critical"), [] { return 9; }).get(), 9);
  share.set(2, "test");
  EXPECT_EQ(wait_for_split(2), 2u);
}

}  // namespace
