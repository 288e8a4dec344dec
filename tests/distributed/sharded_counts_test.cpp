// Counts without locked instructions (distributed/src/sharded_counts.hpp): every thread's adds
// count, once, while readers read; a thread's cached shard never leaks into another object,
// also one allocated where a destroyed one was; a stat_counter's single-writer adds count when
// its writers take turns (the parcel port's received counts).
#include "sharded_counts.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

namespace grain::distributed {
namespace {

TEST(ShardedCounts, EveryThreadsAddsCountWhileReadersRead) {
  sharded_counts<2> c;
  constexpr int threads = 8, adds = 20000;
  std::atomic<bool> done{false};
  std::uint64_t last = 0;
  bool monotonic = true;
  std::thread reader([&] {
    while (!done.load()) {
      const std::uint64_t now = c.load(0);
      if (now < last) monotonic = false;
      last = now;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < threads; ++t)
    writers.emplace_back([&] {
      for (int i = 0; i < adds; ++i) {
        if (i % 2 == 0) {
          c.add(0, 1);
          c.add(1, 3);
        } else {
          c.add({1, 3});  // both at once
        }
      }
    });
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_TRUE(monotonic);
  EXPECT_EQ(c.load(0), std::uint64_t{threads} * adds) << "the writers' threads are gone";
  EXPECT_EQ(c.load(1), std::uint64_t{3} * threads * adds);
}

TEST(ShardedCounts, OneThreadAlternatingBetweenObjectsCountsInEach) {
  sharded_counts<1> a, b;
  for (int i = 0; i < 1000; ++i) {
    a.add(0, 1);
    b.add(0, 2);
  }
  EXPECT_EQ(a.load(0), 1000u);
  EXPECT_EQ(b.load(0), 2000u);
}

TEST(ShardedCounts, ANewObjectWhereADeadOneWasStartsAtZero) {
  for (int round = 0; round < 50; ++round) {
    auto c = std::make_unique<sharded_counts<1>>();
    EXPECT_EQ(c->load(0), 0u) << round;
    c->add(0, 5);
    EXPECT_EQ(c->load(0), 5u);
  }  // the allocator hands the same address out again, most likely
}

TEST(StatCounter, AddsOfWritersTakingTurnsAllCount) {
  stat_counter n;
  std::atomic<bool> turn{false};  // the hand-over between the writers: acquire and release
  constexpr int adds = 2000;
  auto writer = [&](bool mine) {
    for (int i = 0; i < adds; ++i) {
      // Yields: the suite runs beside busy ranks on fewer cores than threads.
      while (turn.load(std::memory_order_acquire) != mine) std::this_thread::yield();
      n.add(1);
      turn.store(!mine, std::memory_order_release);
    }
  };
  std::thread a(writer, false), b(writer, true);
  a.join();
  b.join();
  EXPECT_EQ(n.get(), 2u * adds);
}

}  // namespace
}  // namespace grain::distributed
