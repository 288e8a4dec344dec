// The spawn/join hot path's shortcuts (docs/architecture.md, "The spawn and join hot path"):
// a task run inline by future::get for the only holder of its future publishes without the
// lock and releases without a read-modify-write, and a spawn wakes a sleeping worker only when
// it finds its deque empty. Each test fails if the shortcut loses a value, a block, or work.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "grain/async.hpp"
#include "runtime_fixture.hpp"

namespace {

long fib(long n) {
  if (n < 2) return n;
  auto f = grain::async([n] { return fib(n - 1); });
  const long b = fib(n - 2);
  return f.get() + b;
}

// A value with a destructor: a lost or doubled release of its block shows as a leak (the
// fixture's teardown) or as a double free (ASan).
std::string label(int depth) {
  if (depth == 0) return "x";
  auto a = grain::async([depth] { return label(depth - 1); });
  auto b = grain::async([depth] { return label(depth - 1); });
  return a.get() + b.get();
}

class SpawnPath : public grain::test::WorkersTest {};

TEST_P(SpawnPath, InlineJoinsOfTheOnlyHolderKeepValuesAndBlocks) {
  EXPECT_EQ(grain::async([] { return fib(20); }).get(), 6765);
  EXPECT_EQ(grain::async([] { return label(10); }).get(), std::string(1024, 'x'));
  // The fixture's teardown checks that every task object and state went back.
}

TEST_P(SpawnPath, AnExceptionOfAnInlineJoinReachesTheHolder) {
  auto r = grain::async([] {
    auto f = grain::async([]() -> int { throw std::runtime_error("child"); });
    try {
      return f.get();
    } catch (const std::runtime_error& e) {
      return std::string(e.what()) == "child" ? 1 : 2;
    }
  });
  EXPECT_EQ(r.get(), 1);
}

TEST_P(SpawnPath, AFutureWaitedByTwoThreadsIsPublishedToBoth) {
  // wait() through the future object may come from two threads (a const member, as for
  // std::future): the task run inline by one of them must still wake the other. The child
  // takes 20 ms, so the other thread is registered as a waiter by the time it finishes.
  for (int round = 0; round < 5; ++round) {
    std::atomic<bool> other_woken{false};
    auto r = grain::async([&] {
      auto f = grain::async([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return 7;
      });
      std::thread t([&] {
        other_woken = f.wait_for(std::chrono::seconds(5)) == grain::future_status::ready;
      });
      f.wait();
      t.join();  // before get(): get() empties the future object t waits through
      return f.get();
    });
    EXPECT_EQ(r.get(), 7);
    EXPECT_TRUE(other_woken.load()) << "the second waiter was not woken";
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, SpawnPath, grain::test::worker_counts(),
                         grain::test::worker_count_name);

TEST(SpawnWake, WorkQueuedBehindTheFirstSpawnReachesASleepingWorker) {
  // Two workers; the second has gone to sleep (nothing to do for 100 ms). A task spawns two
  // children and then holds its worker's OS thread until both ran: only the other worker can
  // run them, so the first spawn (onto an empty deque) must wake it and the second (onto a
  // non-empty one, which wakes nobody) must still be found by it.
  auto rt = grain::test::start_runtime({"--grain:threads=2"});
  std::atomic<int> ran{0};
  const bool both = grain::async([&] {
                      std::this_thread::sleep_for(std::chrono::milliseconds(100));
                      auto a = grain::async([&] { ran.fetch_add(1); });
                      auto b = grain::async([&] { ran.fetch_add(1); });
                      const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                      while (ran.load() < 2 && std::chrono::steady_clock::now() < limit)
                        std::this_thread::yield();
                      const bool ok = ran.load() == 2;
                      a.get();
                      b.get();
                      return ok;
                    }).get();
  rt->stop();
  EXPECT_TRUE(both) << "a child stayed queued behind a worker that held its thread";
}

}  // namespace
