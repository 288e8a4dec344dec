// A user thread waiting for a value that no local task computes (a promise: a remote result, a
// collective) polls the pool's background work on its own worker instead of suspending, while
// that worker has nothing else queued and for at most waiter_poll_ns (runtime/src/scheduler.hpp).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "grain/async.hpp"
#include "grain/future.hpp"
#include "grain/this_task.hpp"
#include "runtime_fixture.hpp"

using grain::test::start_runtime;

namespace {

// Background work that counts its calls while `waiting` is set and, when `deliver_after` > 0,
// sets the promise on that call.
struct network_stub {
  grain::promise<int> p;
  std::atomic<bool> waiting{false};
  std::atomic<int> calls{0};
  int deliver_after = 0;
  bool set = false;  // only the background work (one caller at a time) touches it
  bool poll() {
    if (!waiting.load()) return false;
    const int n = ++calls;
    if (deliver_after > 0 && n == deliver_after && !set) {
      set = true;
      p.set_value(42);
      return true;
    }
    return false;
  }
};

}  // namespace

TEST(WaitPolling, AWaiterPollsTheNetworkInsteadOfSuspending) {
  auto rt = start_runtime({"--grain:threads=1"});
  network_stub net;
  net.deliver_after = 3;
  const int id = rt->add_background_work(0, [&] { return net.poll(); });
  const int v = grain::async([&] {
                  auto f = net.p.get_future();
                  net.waiting = true;
                  return f.get();
                }).get();
  rt->remove_background_work(id);
  rt->stop();
  EXPECT_EQ(v, 42);
  EXPECT_GE(net.calls.load(), 3);
  EXPECT_EQ(rt->stats(0).suspensions.get(), 0u)
      << "the waiter suspended although only background work could bring its value";
}

TEST(WaitPolling, QueuedWorkIsNotKeptWaitingByAPollingWaiter) {
  auto rt = start_runtime({"--grain:threads=1"});
  network_stub net;  // never delivers: a queued task sets the promise
  const int id = rt->add_background_work(0, [&] { return net.poll(); });
  std::atomic<int> calls_before_child{-1};
  const int v = grain::async([&] {
                  auto f = net.p.get_future();
                  grain::post(grain::executor{}, [&] {
                    calls_before_child = net.calls.load();
                    net.p.set_value(7);
                  });
                  net.waiting = true;
                  return f.get();
                }).get();
  rt->remove_background_work(id);
  rt->stop();
  EXPECT_EQ(v, 7);
  // Polling until the 10 µs budget ends would call the stub hundreds of times first.
  EXPECT_LT(calls_before_child.load(), 5) << "the waiter polled while its worker had a task queued";
  EXPECT_GE(rt->stats(0).suspensions.get(), 1u);
}

TEST(WaitPolling, AWaiterSuspendsAfterItsPollingBudget) {
  auto rt = start_runtime({"--grain:threads=1"});
  network_stub net;  // never delivers: an OS thread sets the promise 30 ms later
  const int id = rt->add_background_work(0, [&] { return net.poll(); });
  std::thread later([&] {
    while (!net.waiting.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    net.p.set_value(9);
  });
  const int v = grain::async([&] {
                  auto f = net.p.get_future();
                  net.waiting = true;
                  return f.get();
                }).get();
  later.join();
  rt->remove_background_work(id);
  rt->stop();
  EXPECT_EQ(v, 9);
  EXPECT_GE(rt->stats(0).suspensions.get(), 1u) << "the waiter polled for 30 ms instead of 10 µs";
  EXPECT_GT(net.calls.load(), 0);
}

// Two entries: the "collectives" one moves on every call (it is what the waiter waits for), the
// "parcels" one never does. The waiter's rounds (counted by the waiting task's id: an idle
// worker's rounds run everything) run the one that moved every time and the other every fourth
// round: polled less, never starved.
TEST(WaitPolling, TheEntryThatMovedLastIsPolledEveryRoundTheOthersEveryFourth) {
  auto rt = start_runtime({"--grain:threads=1"});
  std::atomic<std::uint64_t> waiter{0};
  std::atomic<int> idle_calls{0}, busy_calls{0};
  grain::promise<int> p;
  bool set = false;
  constexpr int deliver_after = 64;
  auto by_waiter = [&] {
    const std::uint64_t w = waiter.load();
    return w != 0 && grain::this_task::get_id() == w;
  };
  const int idle = rt->add_background_work(0, [&] {
    if (by_waiter()) ++idle_calls;
    return false;
  });
  const int busy = rt->add_background_work(0, [&] {
    if (waiter.load() == 0) return false;
    // Past the waiter's polling budget (a slow or preempted machine) the idle loop calls this:
    // it delivers at once, and the test is skipped below.
    const bool mine = by_waiter();
    if ((!mine || ++busy_calls == deliver_after) && !set) {
      set = true;
      p.set_value(1);
    }
    return true;
  });
  const int v = grain::async([&] {
                  auto f = p.get_future();
                  waiter = grain::this_task::get_id();
                  return f.get();
                }).get();
  rt->remove_background_work(busy);
  rt->remove_background_work(idle);
  rt->stop();
  EXPECT_EQ(v, 1);
  if (rt->stats(0).suspensions.get() != 0)
    GTEST_SKIP() << "the waiter used up its polling budget (a preempted worker)";
  // Every round would give 64 idle calls; one in four gives 16 (plus the first round's).
  EXPECT_GE(idle_calls.load(), deliver_after / 4 - 2) << "the idle entry was starved";
  EXPECT_LE(idle_calls.load(), deliver_after / 4 + 2) << "the idle entry ran every round";
}
