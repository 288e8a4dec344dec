// grain::task_group: every task runs once and is waited for, whoever runs it (the owner inline,
// a thief, the loop after the owner suspended); results written by the tasks are visible after
// wait(); exceptions; the owner rule; the destructor; nested groups; runs from inside the
// group; tasks that suspend; a waiting main thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "grain/async.hpp"
#include "grain/detail/shared_state.hpp"
#include "grain/lcos/latch.hpp"
#include "grain/task_group.hpp"
#include "grain/this_thread.hpp"
#include "runtime_fixture.hpp"

using grain::test::start_runtime;
using grain::test::WorkersTest;

namespace {

long tree(int depth, int fanout) {  // nodes of a full tree, counted by a group per node
  if (depth == 0) return 1;
  std::vector<long> r(static_cast<std::size_t>(fanout));
  grain::task_group g;
  for (int i = 0; i < fanout; ++i)
    g.run([&r, i, depth, fanout] { r[static_cast<std::size_t>(i)] = tree(depth - 1, fanout); });
  g.wait();
  return 1 + std::accumulate(r.begin(), r.end(), 0L);
}

class TaskGroup : public WorkersTest {};

TEST_P(TaskGroup, EveryTaskRunsOnceAndItsResultIsVisibleAfterWait) {
  const long nodes = grain::async([] { return tree(6, 6); }).get();  // 55,987 nodes
  EXPECT_EQ(nodes, 55987);
}

TEST_P(TaskGroup, ManyTasksFromTheMainThread) {
  // The owner is no task: every spawn and finish is counted in the shared word, and the main
  // thread blocks its OS thread until the last one.
  std::vector<int> hits(5000, 0);
  grain::task_group g;
  for (int i = 0; i < 5000; ++i) g.run([&hits, i] { hits[static_cast<std::size_t>(i)]++; });
  g.wait();
  EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), 5000);
}

TEST_P(TaskGroup, TheFirstExceptionIsRethrownAndEveryTaskStillRuns) {
  const auto unread_before = grain::detail::unread_exceptions();
  std::atomic<int> ran{0};
  grain::async([&] {
    grain::task_group g;
    for (int i = 0; i < 100; ++i)
      g.run([&ran, i] {
        ran.fetch_add(1);
        if (i % 10 == 3) throw std::runtime_error("task " + std::to_string(i));
      });
    EXPECT_THROW(g.wait(), std::runtime_error);
    EXPECT_EQ(ran.load(), 100);
    // Reusable afterwards, and the error does not come back.
    g.run([&ran] { ran.fetch_add(1); });
    EXPECT_NO_THROW(g.wait());
  }).get();
  EXPECT_EQ(ran.load(), 101);
  EXPECT_EQ(grain::detail::unread_exceptions() - unread_before, 9u)
      << "the nine exceptions after the first are counted as unread";
}

TEST_P(TaskGroup, TheDestructorWaitsForTasksStillRunning) {
  std::atomic<int> done{0};
  grain::async([&] {
    grain::task_group g;
    for (int i = 0; i < 8; ++i)
      g.run([&done] {
        grain::this_thread::sleep_for(std::chrono::milliseconds(5));
        done.fetch_add(1);
      });
    // No wait(): the destructor must not let the tasks outlive this frame.
  }).get();
  EXPECT_EQ(done.load(), 8);
}

TEST_P(TaskGroup, AnExceptionNobodyWaitedForIsReportedByTheDestructor) {
  const auto unread_before = grain::detail::unread_exceptions();
  grain::async([] {
    grain::task_group g;
    g.run([] { throw std::runtime_error("nobody waits"); });
  }).get();
  EXPECT_EQ(grain::detail::unread_exceptions() - unread_before, 1u);
}

TEST_P(TaskGroup, TasksOfTheGroupRunMoreTasksOfIt) {
  std::atomic<int> leaves{0};
  grain::async([&] {
    grain::task_group g;
    // Each task adds two more until depth 10: 2^10 leaves, all counted in from inside.
    struct spread {
      grain::task_group& g;
      std::atomic<int>& leaves;
      void operator()(int depth) const {
        if (depth == 10) {
          leaves.fetch_add(1);
          return;
        }
        g.run([s = *this, depth] { s(depth + 1); });
        g.run([s = *this, depth] { s(depth + 1); });
      }
    };
    g.run([s = spread{g, leaves}] { s(0); });
    g.wait();
    EXPECT_EQ(leaves.load(), 1024);
  }).get();
}

TEST_P(TaskGroup, TasksThatSuspendAreWaitedFor) {
  // Half the tasks wait on a latch the other half count down: the first ones the owner runs
  // inline suspend its whole stack, and the rest must run elsewhere (thieves or the loop).
  std::atomic<int> done{0};
  grain::async([&] {
    grain::latch l(10);
    grain::task_group g;
    for (int i = 0; i < 20; ++i)
      g.run([&l, &done, i] {
        if (i % 2 == 0)
          l.count_down();
        else
          l.wait();
        done.fetch_add(1);
      });
    g.wait();
  }).get();
  EXPECT_EQ(done.load(), 20);
}

TEST_P(TaskGroup, WaitFromAnotherTaskIsRefused) {
  grain::task_group* shared = nullptr;
  grain::async([&] {
    grain::task_group g;
    shared = &g;
    g.run([] {});
    grain::async([&] { EXPECT_THROW(shared->wait(), std::logic_error); }).get();
    g.wait();
  }).get();
}

TEST_P(TaskGroup, GroupsOnAnotherExecutorAreWaitedFor) {
  std::atomic<int> done{0};
  grain::async([&] {
    grain::task_group g;
    for (int i = 0; i < 50; ++i)
      g.run(grain::executor{grain::priority::high}, [&done] { done.fetch_add(1); });
    g.wait();
  }).get();
  EXPECT_EQ(done.load(), 50);
}

TEST_P(TaskGroup, StressOfSmallGroupsUnderStealing) {
  // Many groups of 10 whose tasks spin briefly, so that thieves take some of every group and
  // finish them while the owner runs the rest: the shared and the owner's counts must agree.
  for (int round = 0; round < 20; ++round) {
    const long n = grain::async([] {
                     std::atomic<long> sum{0};
                     grain::task_group outer;
                     for (int k = 0; k < 50; ++k)
                       outer.run([&sum] {
                         long r[10] = {};
                         grain::task_group g;
                         for (int i = 0; i < 10; ++i)
                           g.run([&r, i] {
                             const auto until =
                                 std::chrono::steady_clock::now() + std::chrono::microseconds(2);
                             while (std::chrono::steady_clock::now() < until) {
                             }
                             r[i] = i;
                           });
                         g.wait();
                         sum.fetch_add(std::accumulate(r, r + 10, 0L));
                       });
                     outer.wait();
                     return sum.load();
                   }).get();
    ASSERT_EQ(n, 50 * 45);
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, TaskGroup, grain::test::worker_counts(),
                         grain::test::worker_count_name);

TEST(TaskGroupOneWorker, TheOwnerRunsItsTasksInlineWithoutSuspending) {
  auto rt = start_runtime({"--grain:threads=1"});
  const long nodes = grain::async([] { return tree(4, 10); }).get();
  rt->stop();
  EXPECT_EQ(nodes, 11111);
  EXPECT_EQ(rt->stats(0).suspensions.get(), 0u) << "the owner suspended instead of joining";
  EXPECT_GE(rt->stats(0).inline_tasks.get(), 11110u);
}

TEST(TaskGroupNoRuntime, RunWithoutARuntimeThrows) {
  grain::task_group g;
  EXPECT_THROW(g.run([] {}), std::logic_error);
  EXPECT_NO_THROW(g.wait());
}

}  // namespace
