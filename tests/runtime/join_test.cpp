// Joining children: a parent that waits for a child still in its own queue runs it (and the
// younger siblings above it) on its own stack instead of suspending, but never runs work that
// is not its own child while it waits.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "grain/async.hpp"
#include "runtime_fixture.hpp"

using grain::test::start_runtime;

TEST(JoinTest, WaitingInSpawnOrderRunsTheSiblingsInline) {
  // One worker: nobody steals, so what runs inline is deterministic.
  auto rt = start_runtime({"--grain:threads=1"});
  const int sum = grain::async([] {
                    std::vector<grain::future<int>> kids;
                    for (int i = 0; i < 100; ++i) kids.push_back(grain::async([i] { return i; }));
                    int s = 0;
                    for (auto& k : kids) s += k.get();  // the first one is the oldest in the queue
                    return s;
                  }).get();
  rt->stop();
  EXPECT_EQ(sum, 4950);
  EXPECT_EQ(rt->stats(0).suspensions.get(), 0u) << "the parent suspended instead of joining";
  EXPECT_GE(rt->stats(0).inline_tasks.get(), 100u);
}

TEST(JoinTest, WaitingDoesNotRunAnotherTasksChildren) {
  auto rt = start_runtime({"--grain:threads=1"});
  std::atomic<int> grandchild_runs{0};
  std::vector<int> order;  // one worker: no concurrent access
  const int r = grain::async([&] {
                  auto b = grain::async([&] {
                    order.push_back(2);
                    return 1;
                  });
                  grain::future<void> g;
                  auto a = grain::async([&] {
                    // A's child, left in the queue above B when A returns.
                    g = grain::async([&] {
                      order.push_back(1);
                      ++grandchild_runs;
                    });
                    return 2;
                  });
                  const int x = a.get();  // A is at the bottom: runs inline
                  // The queue now holds B, then A's child. Waiting for B must not run A's
                  // child on this stack: the parent suspends and the worker runs both.
                  const int y = b.get();
                  g.get();
                  return x + y;
                }).get();
  rt->stop();
  EXPECT_EQ(r, 3);
  EXPECT_EQ(grandchild_runs.load(), 1);
  EXPECT_GE(rt->stats(0).suspensions.get(), 1u)
      << "waiting for B ran a task that is not B's sibling";
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}
