// The parts of std's synchronisation and launch API beyond the everyday ones, under grain's
// names: notify_all_at_thread_exit (on an OS thread and in a task), launch's bitmask operators,
// latch::max() and its constexpr constructor, barrier::max(), and counting_semaphore rejecting a
// negative maximum.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <limits>
#include <mutex>
#include <thread>

#include "grain/async.hpp"
#include "grain/launch.hpp"
#include "grain/lcos/barrier.hpp"
#include "grain/lcos/condition_variable.hpp"
#include "grain/lcos/counting_semaphore.hpp"
#include "grain/lcos/latch.hpp"
#include "grain/lcos/mutex.hpp"
#include "grain/this_task.hpp"
#include "runtime_fixture.hpp"

using namespace std::chrono_literals;

// --- launch ---------------------------------------------------------------------------------

static_assert((grain::launch::async & grain::launch::deferred) == grain::launch(0));
static_assert((grain::launch::async ^ grain::launch::deferred) ==
              (grain::launch::async | grain::launch::deferred));
static_assert(grain::launch(~1u) == ~grain::launch::async);
static_assert((~grain::launch::async & grain::launch::deferred) == grain::launch::deferred);

TEST(StdApiLaunch, CompoundAssignments) {
  grain::launch x = grain::launch::async;
  x &= grain::launch::deferred;
  EXPECT_EQ(x, grain::launch(0));
  x = grain::launch::async;
  x |= grain::launch::deferred;
  EXPECT_EQ(x, grain::launch::async | grain::launch::deferred);
  x ^= grain::launch::deferred;
  EXPECT_EQ(x, grain::launch::async);
  EXPECT_EQ(&(x |= grain::launch::sync), &x);  // they return the left operand
}

// --- latch, barrier, counting_semaphore -----------------------------------------------------

static_assert(grain::latch::max() == std::numeric_limits<std::ptrdiff_t>::max());
static_assert(grain::barrier<>::max() == std::numeric_limits<std::ptrdiff_t>::max());
static_assert(noexcept(grain::latch::max()) && noexcept(grain::barrier<>::max()));

namespace {
// Compiles only because latch's constructor is constexpr.
constinit grain::latch g_constant_latch(2);

template <std::ptrdiff_t N>
concept semaphore_with_max = requires {
  typename grain::counting_semaphore<N>;
};
}  // namespace

// std makes counting_semaphore<-1> ill-formed; grain's refuses to compile it (a constraint).
static_assert(!semaphore_with_max<-1>);
static_assert(semaphore_with_max<0> && semaphore_with_max<1>);
static_assert(grain::counting_semaphore<5>::max() == 5);

TEST(StdApiLatch, ConstantInitialisedLatchWorks) {
  EXPECT_FALSE(g_constant_latch.try_wait());
  std::thread t([] { g_constant_latch.count_down(); });
  g_constant_latch.arrive_and_wait();
  t.join();
  EXPECT_TRUE(g_constant_latch.try_wait());
}

// --- notify_all_at_thread_exit --------------------------------------------------------------

namespace {
// What the notifier leaves: the flag waited for, set under the lock, and whether the code after
// the call ran before the waiter woke (it must have: the lock is held until the caller ends).
struct notified_state {
  grain::mutex m;
  grain::condition_variable cv;
  bool flag = false;
  std::atomic<bool> body_done{false};
};

void notify_at_exit_then_work(notified_state& s, bool in_task) {
  std::unique_lock<grain::mutex> lk(s.m);
  s.flag = true;
  grain::notify_all_at_thread_exit(s.cv, std::move(lk));
  // Long enough for a waiter woken too early to be seen waking early.
  if (in_task)
    grain::this_task::sleep_for(20ms);
  else
    std::this_thread::sleep_for(20ms);
  s.body_done = true;
}

bool wait_for_flag(notified_state& s) {
  std::unique_lock<grain::mutex> lk(s.m);
  EXPECT_TRUE(s.cv.wait_for(lk, 30s, [&] { return s.flag; }));
  return s.body_done.load();
}
}  // namespace

TEST(StdApiNotifyAtExit, OnAThreadWakesWaitersWhenTheThreadEnds) {
  notified_state s;
  std::unique_lock<grain::mutex> lk(s.m);
  std::thread t([&] { notify_at_exit_then_work(s, false); });
  ASSERT_TRUE(s.cv.wait_for(lk, 30s, [&] { return s.flag; }));
  EXPECT_TRUE(s.body_done.load());  // not woken before the thread's body ended
  lk.unlock();
  t.join();
}

class StdApiNotifyAtTaskExit : public grain::test::WorkersTest {};
INSTANTIATE_TEST_SUITE_P(Workers, StdApiNotifyAtTaskExit, grain::test::worker_counts(),
                         grain::test::worker_count_name);

TEST_P(StdApiNotifyAtTaskExit, WakesWaitersWhenTheTaskEnds) {
  // A waiting task and a waiting OS thread, both woken by the notifier task's end.
  notified_state s;
  auto waiter = grain::async([&] { return wait_for_flag(s); });
  auto notifier = grain::async([&] { notify_at_exit_then_work(s, true); });
  EXPECT_TRUE(wait_for_flag(s));
  EXPECT_TRUE(waiter.get());
  notifier.get();
}
