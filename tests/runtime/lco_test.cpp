#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "grain/async.hpp"
#include "grain/lcos/barrier.hpp"
#include "grain/lcos/channel.hpp"
#include "grain/lcos/condition_variable.hpp"
#include "grain/lcos/counting_semaphore.hpp"
#include "grain/lcos/latch.hpp"
#include "grain/lcos/mutex.hpp"
#include "grain/this_task.hpp"
#include "grain/when_all.hpp"
#include "runtime_fixture.hpp"

using namespace std::chrono_literals;
using grain::test::RuntimeTest;

class LcoTest : public grain::test::WorkersTest {};
INSTANTIATE_TEST_SUITE_P(Workers, LcoTest, grain::test::worker_counts(),
                         grain::test::worker_count_name);
// At the default two workers only: a hundred thousand user threads take long enough once.
class LcoStressTest : public RuntimeTest {};

TEST_P(LcoTest, MutexProtectsCounterWithStdLocks) {
  grain::mutex m;
  long counter = 0;
  std::vector<grain::future<void>> v;
  for (int t = 0; t < 64; ++t) {
    v.push_back(grain::async([&] {
      for (int i = 0; i < 1000; ++i) {
        std::lock_guard lock(m);
        ++counter;
        if (i % 100 == 0) grain::this_task::yield();  // hold it across a suspension
      }
    }));
  }
  for (int i = 0; i < 1000; ++i) {  // the main OS thread competes too
    std::unique_lock lock(m);
    ++counter;
  }
  for (auto& f : v) f.get();
  EXPECT_EQ(counter, 65000);
  grain::mutex a, b;
  std::lock(a, b);
  EXPECT_FALSE(a.try_lock());
  a.unlock();
  b.unlock();
  std::scoped_lock both(a, b);
}

TEST_P(LcoTest, ConditionVariableProducerConsumer) {
  grain::mutex m;
  grain::condition_variable cv;
  std::vector<int> q;
  bool done = false;
  auto consumer = grain::async([&] {
    long sum = 0;
    for (;;) {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return !q.empty() || done; });
      if (q.empty() && done) return sum;
      sum += q.back();
      q.pop_back();
    }
  });
  for (int i = 1; i <= 1000; ++i) {
    std::lock_guard lock(m);
    q.push_back(i);
    cv.notify_one();
  }
  {
    std::lock_guard lock(m);
    done = true;
  }
  cv.notify_all();
  EXPECT_EQ(consumer.get(), 500500);
}

TEST_P(LcoTest, ConditionVariableTimeout) {
  grain::mutex m;
  grain::condition_variable cv;
  auto r = grain::async([&] {
    std::unique_lock lock(m);
    return cv.wait_for(lock, 20ms) == grain::cv_status::timeout && lock.owns_lock();
  });
  EXPECT_TRUE(r.get());
  std::unique_lock lock(m);
  EXPECT_FALSE(cv.wait_for(lock, 5ms, [] { return false; }));
}

TEST_P(LcoTest, LatchReleasesAllWaiters) {
  grain::latch l(1);
  std::atomic<int> released{0};
  std::vector<grain::future<void>> v;
  for (int i = 0; i < 1000; ++i)
    v.push_back(grain::async([&] {
      l.wait();
      released++;
    }));
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(released.load(), 0);
  l.count_down();
  for (auto& f : v) f.get();
  EXPECT_EQ(released.load(), 1000);
  EXPECT_THROW(l.count_down(), std::invalid_argument);
}

TEST_P(LcoTest, BarrierPhasesWithCompletion) {
  std::atomic<int> phases{0};
  auto on_phase = [&]() noexcept { phases++; };
  grain::barrier b(4, on_phase);
  std::atomic<int> after{0};
  std::vector<grain::future<void>> v;
  for (int t = 0; t < 4; ++t)
    v.push_back(grain::async([&] {
      for (int i = 0; i < 10; ++i) {
        b.arrive_and_wait();
        after++;
      }
    }));
  for (auto& f : v) f.get();
  EXPECT_EQ(phases.load(), 10);
  EXPECT_EQ(after.load(), 40);
}

TEST_P(LcoTest, SemaphoreLimitsConcurrency) {
  grain::counting_semaphore<> sem(2);
  std::atomic<int> inside{0}, peak{0};
  std::vector<grain::future<void>> v;
  for (int i = 0; i < 50; ++i)
    v.push_back(grain::async([&] {
      sem.acquire();
      int n = ++inside;
      int p = peak.load();
      while (n > p && !peak.compare_exchange_weak(p, n)) {
      }
      grain::this_task::yield();
      --inside;
      sem.release();
    }));
  for (auto& f : v) f.get();
  EXPECT_LE(peak.load(), 2);
  EXPECT_GE(peak.load(), 1);
  grain::binary_semaphore b(0);
  EXPECT_FALSE(b.try_acquire_for(10ms));
  b.release();
  EXPECT_TRUE(b.try_acquire());
}

TEST_P(LcoTest, ChannelBoundedAndClosed) {
  grain::channel<int> ch(4);
  auto producer = grain::async([&] {
    for (int i = 0; i < 1000; ++i) ch.send(i);
    ch.close();
  });
  long sum = 0;
  while (auto v = ch.receive()) sum += *v;
  producer.get();
  EXPECT_EQ(sum, 499500);
  EXPECT_THROW(ch.send(1), grain::channel_closed);
  EXPECT_FALSE(ch.try_receive().has_value());
}

TEST_F(LcoStressTest, HundredThousandSuspendedOnLatchStress) {
  // 100,000 user threads suspended at once: beyond the guard-page budget of the default
  // vm.max_map_count, so this also exercises the unguarded slab stacks.
  constexpr int n = 100000;
  grain::latch gate(1);
  grain::latch arrived(n);
  std::vector<grain::future<void>> v;
  v.reserve(n);
  for (int i = 0; i < n; ++i)
    v.push_back(grain::async([&] {
      arrived.count_down();
      gate.wait();
    }));
  arrived.wait();
  gate.count_down();
  for (auto& f : v) f.get();
  SUCCEED();
}
