// The work-stealing deque (runtime/src/chase_lev_deque.hpp) in each of its fence modes: with
// asymmetric fences (the owner's pop fenced by a compiler barrier only, each steal by
// membarrier), with a full fence on both sides, and adaptive (each deque switching between the
// two as thieves come and go). Each item must be taken once and only once:
// a missing barrier shows as an item taken twice (owner and thief both take the last one) or
// never. The stress tests count every take per item.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "chase_lev_deque.hpp"

namespace {

using grain::detail::chase_lev_deque;

// Restores the fence mode a test changed (the scheduler sets it; no deque is in use here
// while it changes).
using grain::detail::fence_mode;

class DequeMode : public ::testing::TestWithParam<fence_mode> {
 protected:
  void SetUp() override {
    saved_ = grain::detail::g_fence_mode;
    if (grain::detail::set_fence_mode(GetParam()) != GetParam())
      GTEST_SKIP() << "no membarrier here";
  }
  void TearDown() override { grain::detail::g_fence_mode = saved_; }
  fence_mode saved_ = fence_mode::symmetric;
};

TEST_P(DequeMode, OwnerIsLifoThievesFifo) {
  std::vector<int> items(4);
  chase_lev_deque<int*> q(2);  // grows twice on the way
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_EQ(q.steal(), nullptr);
  EXPECT_TRUE(q.push(&items[0]));  // onto an empty deque
  EXPECT_FALSE(q.push(&items[1]));
  q.push(&items[2]);
  q.push(&items[3]);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.steal(), &items[0]);
  EXPECT_EQ(q.pop(), &items[3]);
  EXPECT_EQ(q.peek_bottom(), &items[2]);
  EXPECT_EQ(q.steal(), &items[1]);
  EXPECT_EQ(q.pop(), &items[2]);
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_EQ(q.steal(), nullptr);
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(q.push(&items[0]));  // empty again
  EXPECT_EQ(q.pop(), &items[0]);
}

// The owner pushes a burst and pops it back while thieves steal, for `rounds` rounds (or 5 s
// on a loaded machine); every item must be taken exactly once. Bursts of 6 or more are what
// catch a missing barrier: a thief takes the second-to-last item while the owner's pop,
// whose decrement of bottom the thief does not see yet, reads the top from before that steal
// and takes the last item without a CAS, which a second steal then takes too. With the heavy
// fence reduced to a plain fence (the owner then has none), BurstsOfEight and
// LongBurstsManyThieves each found 6-20 items taken twice per run on this 2-core machine.
// `intermittent`: the thieves steal in bursts of a few hundred attempts and pause between
// them, so that an adaptive deque goes back and forth between its two fences.
struct stress_result {
  long stolen = 0;
  std::uint64_t fence_switches = 0;
};
stress_result stress(int thieves, int burst, int rounds, bool intermittent = false) {
  const std::size_t n = static_cast<std::size_t>(rounds) * static_cast<std::size_t>(burst);
  std::vector<int> items(n);
  auto taken = std::make_unique<std::atomic<int>[]>(n);
  chase_lev_deque<int*> q(4);  // grows on the way
  std::atomic<bool> done{false};
  std::atomic<int> started{0};
  std::atomic<long> stolen{0};
  auto take = [&](int* p) {
    taken[static_cast<std::size_t>(p - items.data())].fetch_add(1, std::memory_order_relaxed);
  };
  std::vector<std::thread> ts;
  for (int k = 0; k < thieves; ++k)
    ts.emplace_back([&, k] {
      started.fetch_add(1);
      long mine = 0;
      for (unsigned round = 0; !done.load(std::memory_order_acquire); ++round) {
        for (int i = 0; i < 200 + 100 * k; ++i)
          if (int* p = q.steal()) {
            take(p);
            ++mine;
          }
        if (intermittent)
          std::this_thread::sleep_for(std::chrono::microseconds(50 + 30 * (round % 7)));
      }
      stolen.fetch_add(mine);
    });
  while (started.load() < thieves) std::this_thread::yield();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  long popped = 0;
  std::size_t next = 0;
  for (int r = 0; r < rounds; ++r) {
    if ((r & 1023) == 0 && std::chrono::steady_clock::now() > deadline) break;
    for (int i = 0; i < burst; ++i) q.push(&items[next++]);
    for (int i = 0; i < burst; ++i)
      if (int* p = q.pop()) {
        take(p);
        ++popped;
      }
  }
  done.store(true, std::memory_order_release);
  for (auto& t : ts) t.join();
  while (int* p = q.pop()) {
    take(p);
    ++popped;
  }
  int twice = 0, never = 0;
  for (std::size_t i = 0; i < next; ++i) {
    const int c = taken[i].load();
    twice += c > 1;
    never += c == 0;
  }
  EXPECT_EQ(twice, 0);
  EXPECT_EQ(never, 0);
  EXPECT_EQ(popped + stolen.load(), static_cast<long>(next));
  return {stolen.load(), q.fence_switches()};
}

// One item at a time: every steal races with the owner's pop of the same, last, item.
TEST_P(DequeMode, LastItemRaceOneThief) {
  stress(1, 1, 300'000);
}

TEST_P(DequeMode, BurstsOfEight) {
  EXPECT_GT(stress(2, 8, 300'000).stolen, 0);  // a run in which nothing was stolen tests nothing
}

TEST_P(DequeMode, LongBurstsManyThieves) {
  EXPECT_GT(stress(4, 64, 20'000).stolen, 0);
}

// A thief that finds work must get it even while the owner never pops (a task that spins
// waiting for its sibling to run elsewhere relies on it).
TEST_P(DequeMode, StealsWhileOwnerIsBusy) {
  std::vector<int> items(1000);
  chase_lev_deque<int*> q;
  for (auto& i : items) q.push(&i);
  std::atomic<int> got{0};
  std::thread thief([&] {
    while (q.steal()) got.fetch_add(1);
  });
  thief.join();
  EXPECT_EQ(got.load(), 1000);
  EXPECT_EQ(q.pop(), nullptr);
}

// Thieves that come and go: the owner's pops switch between light and full fences many times,
// with steals racing each switch. Every item must still be taken exactly once.
TEST_P(DequeMode, ThievesComingAndGoing) {
  const stress_result r = stress(2, 8, 250'000, true);
  EXPECT_GT(r.stolen, 0);
  if (GetParam() == fence_mode::adaptive) {
    EXPECT_GE(r.fence_switches, 4u) << "the owner never went back and forth";
  } else {
    EXPECT_EQ(r.fence_switches, 0u);
  }
}

// Adaptive: nobody steals, so the pops fence lightly after a quiet stretch; one steal makes
// the owner fence fully from its next pop on.
TEST(DequeAdaptive, LightWhileQuietFullAfterASteal) {
  const auto saved = grain::detail::g_fence_mode;
  if (grain::detail::set_fence_mode(fence_mode::adaptive) != fence_mode::adaptive)
    GTEST_SKIP() << "no membarrier here";
  std::vector<int> items(2000);
  chase_lev_deque<int*> q;
  EXPECT_FALSE(q.fences_lightly());
  for (auto& i : items) {
    q.push(&i);
    EXPECT_EQ(q.pop(), &i);
  }
  EXPECT_TRUE(q.fences_lightly());
  q.push(&items[0]);
  q.push(&items[1]);
  std::thread([&] { EXPECT_EQ(q.steal(), &items[0]); }).join();
  EXPECT_EQ(q.pop(), &items[1]);
  EXPECT_FALSE(q.fences_lightly());
  EXPECT_EQ(q.fence_switches(), 2u);
  grain::detail::g_fence_mode = saved;
}

INSTANTIATE_TEST_SUITE_P(Fences, DequeMode,
                         ::testing::Values(fence_mode::asymmetric, fence_mode::symmetric,
                                           fence_mode::adaptive),
                         [](const auto& info) {
                           return grain::detail::fence_mode_name(info.param);
                         });

}  // namespace
