// grain::mutex under contention (docs/design/locks.md): many tasks on one lock, critical
// sections long enough for waiters to starve (the hand-over mode), OS threads that are not
// workers among the lockers, and many tasks suspended at once on futures.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "grain/async.hpp"
#include "grain/detail/config.hpp"
#include "grain/future.hpp"
#include "grain/lcos/mutex.hpp"
#include "grain/task_group.hpp"
#include "runtime_fixture.hpp"

namespace {

class MutexContention : public grain::test::WorkersTest {};
INSTANTIATE_TEST_SUITE_P(Workers, MutexContention, grain::test::worker_counts(),
                         grain::test::worker_count_name);

// A critical section that notices a second owner: `inside` is set while the lock is held.
struct guarded {
  grain::mutex m;
  std::atomic<bool> inside{false};
  std::atomic<int> overlaps{0};
  long count = 0;
  void enter_and_leave(std::chrono::microseconds hold = {}) {
    std::lock_guard lock(m);
    if (inside.exchange(true, std::memory_order_relaxed)) overlaps.fetch_add(1);
    ++count;
    if (hold.count() > 0) {
      const auto end = std::chrono::steady_clock::now() + hold;
      while (std::chrono::steady_clock::now() < end) {
      }
    }
    inside.store(false, std::memory_order_relaxed);
  }
};

TEST_P(MutexContention, TwentyThousandTasksEachTakeTheLockOnce) {
  guarded g;
  grain::async([&] {
    grain::task_group tg;
    for (int i = 0; i < 20000; ++i) tg.run([&] { g.enter_and_leave(); });
    tg.wait();
  }).get();
  EXPECT_EQ(g.count, 20000);
  EXPECT_EQ(g.overlaps.load(), 0);
}

// Critical sections of 200 us with 64 tasks and two OS threads queued: waiters wait well over
// the 1 ms after which they ask for hand-over, so unlocks hand the lock to the queue's head,
// to tasks and to blocked OS threads alike.
TEST_P(MutexContention, StarvingWaitersAreHandedTheLock) {
  guarded g;
  std::vector<grain::future<void>> v;
  for (int t = 0; t < 64; ++t)
    v.push_back(grain::async([&] {
      for (int i = 0; i < 5; ++i) g.enter_and_leave(std::chrono::microseconds(200));
    }));
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) g.enter_and_leave(std::chrono::microseconds(50));
    });
  for (auto& f : v) f.get();
  for (auto& t : threads) t.join();
  EXPECT_EQ(g.count, 64 * 5 + 2 * 20);
  EXPECT_EQ(g.overlaps.load(), 0);
  // Free again, in normal mode: an uncontended lock and try_lock work.
  EXPECT_TRUE(g.m.try_lock());
  EXPECT_FALSE(g.m.try_lock());
  g.m.unlock();
  std::lock_guard lock(g.m);
}

// Every waiter gets the lock even when one task holds it across suspensions (a locker cannot
// spin its way in: it must queue and be woken).
TEST_P(MutexContention, LockHeldAcrossASuspension) {
  guarded g;
  grain::promise<void> go;
  grain::shared_future<void> ready = go.get_future().share();
  grain::future<void> holder = grain::async([&] {
    std::lock_guard lock(g.m);
    ready.wait();  // suspends while holding the lock
    ++g.count;
  });
  std::vector<grain::future<void>> v;
  for (int t = 0; t < 200; ++t) v.push_back(grain::async([&] { g.enter_and_leave(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  go.set_value();
  holder.get();
  for (auto& f : v) f.get();
  EXPECT_EQ(g.count, 201);
  EXPECT_EQ(g.overlaps.load(), 0);
}

// Ten thousand tasks suspended at once, each on a future of its own, released in reverse order.
TEST_P(MutexContention, TenThousandSuspendedOnFuturesAllFinish) {
#if GRAIN_TSAN
  // ThreadSanitizer's state per user thread runs out of mappings beyond a few thousand.
  constexpr int n = 1000;
#else
  constexpr int n = 10000;
#endif
  std::vector<grain::promise<int>> p(n);
  std::atomic<int> arrived{0};
  std::atomic<long> sum{0};
  grain::task_group tg;
  for (int i = 0; i < n; ++i) {
    grain::future<int> f = p[static_cast<std::size_t>(i)].get_future();
    tg.run([&, f = std::move(f)]() mutable {
      arrived.fetch_add(1);
      sum.fetch_add(f.get());
    });
  }
  while (arrived.load() < n) std::this_thread::sleep_for(std::chrono::microseconds(200));
  for (int i = n - 1; i >= 0; --i) p[static_cast<std::size_t>(i)].set_value(i);
  tg.wait();
  EXPECT_EQ(sum.load(), static_cast<long>(n) * (n - 1) / 2);
}

}  // namespace
