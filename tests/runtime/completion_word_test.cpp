// A task's completion publishes its result and drops its reference in one read-modify-write
// of the state's word (lock, ready, waiters and the reference count together:
// state_base::mark_ready_and_release in grain/detail/shared_state.hpp). These tests race that
// step with everything else that touches the word from other threads: waiters registering and
// timing out, references added and dropped. A lost wake-up hangs (the waits are bounded and
// fail), a lost or doubled release shows in the fixture's teardown (or as a double free under
// ASan), a torn value as a wrong sum.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "grain/async.hpp"
#include "runtime_fixture.hpp"

namespace {

using namespace std::chrono_literals;

// A short, varying amount of work: completions land in every part of the others' steps.
long spin(long i) {
  auto x = static_cast<unsigned long>(i);  // unsigned: it overflows
  for (long k = 0; k < (i * 7919) % 300; ++k) x = x * 31 + static_cast<unsigned long>(k);
  return static_cast<long>(x & 1) + i;  // i or i + 1, known to the caller through the same function
}

class CompletionWord : public grain::test::WorkersTest {};

TEST_P(CompletionWord, WaitersRegisteringWhileTasksCompleteAreAllWoken) {
  // Three OS threads get() the same shared futures while the tasks complete: each get is a
  // waiter registering (or finding the value) at a random point of the completion, and each
  // copy of a shared future a reference added while the task drops its own.
  constexpr long n = 20'000;
  std::vector<grain::shared_future<long>> fs;
  fs.reserve(n);
  for (long i = 0; i < n; ++i) fs.push_back(grain::async([i] { return spin(i); }).share());
  auto reader = [&] {
    long sum = 0;
    for (long i = 0; i < n; ++i) {
      grain::shared_future<long> copy = fs[static_cast<std::size_t>(i)];
      if (copy.wait_for(10s) != grain::future_status::ready) return -1L;  // lost wake-up
      sum += copy.get() - spin(i);
    }
    return sum;
  };
  long a = -2, b = -2;
  std::thread ta([&] { a = reader(); });
  std::thread tb([&] { b = reader(); });
  const long c = reader();
  ta.join();
  tb.join();
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 0);
  EXPECT_EQ(c, 0);
}

TEST_P(CompletionWord, FuturesDroppedWhileTasksCompleteFreeEachStateOnce) {
  // The future's release races with the task's publish-and-release: exactly one of them must
  // find the count at its end and free the block (the teardown counts the blocks).
  std::atomic<long> ran{0};
  std::atomic<long> paused{0};
  for (long i = 0; i < 50'000; ++i) {
    auto f = grain::async([i, &ran] {
      ran.fetch_add(1, std::memory_order_relaxed);
      return spin(i);
    });
    // Every third round the creator pauses about as long as a task runs, so that completions
    // land before, during and after the drops. A busy pause: std::this_thread::yield() hands
    // the core to the OS, which on a loaded machine took milliseconds a call (minutes a test).
    if (i % 3 == 0) paused.store(spin(i), std::memory_order_relaxed);
  }  // each future dropped at once
  const auto limit = std::chrono::steady_clock::now() + 20s;
  while (ran.load() < 50'000 && std::chrono::steady_clock::now() < limit)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(ran.load(), 50'000);
}

TEST_P(CompletionWord, TimedWaitsThatGiveUpLeaveTheListConsistent) {
  // A waiter that times out takes itself off the list (remove_waiter) while the task may be
  // completing; the completion must then neither wake a waiter that left nor miss one that
  // stayed.
  for (long i = 0; i < 3'000; ++i) {
    auto f = grain::async([i] {
      std::this_thread::sleep_for(std::chrono::microseconds(i % 50));
      return spin(i);
    });
    auto s = f.share();
    (void)s.wait_for(std::chrono::microseconds(i % 40));  // ready or not: both are fine
    ASSERT_EQ(s.wait_for(10s), grain::future_status::ready) << "round " << i;
    ASSERT_EQ(s.get(), spin(i));
  }
}

TEST_P(CompletionWord, ExceptionsArePublishedWithTheRelease) {
  long caught = 0;
  for (long i = 0; i < 2'000; ++i) {
    auto f = grain::async([i]() -> long {
      if (i % 2) throw std::runtime_error("odd");
      return spin(i);
    });
    try {
      EXPECT_EQ(f.get(), spin(i));
    } catch (const std::runtime_error&) {
      ++caught;
    }
  }
  EXPECT_EQ(caught, 1'000);
}

TEST_P(CompletionWord, TheCapturesAreGoneWhenTheValueIsReady) {
  // The callable and its captures are destroyed before the result is published (they may
  // not be touched after it: the state can be freed at once), so a holder that sees the value
  // also sees the destructor's effects.
  struct marks_destruction {
    std::atomic<int>* count;
    explicit marks_destruction(std::atomic<int>* c) : count(c) {}
    marks_destruction(const marks_destruction& o) : count(o.count) { count->fetch_sub(1); }
    ~marks_destruction() { count->fetch_add(1); }
  };
  for (int i = 0; i < 1'000; ++i) {
    std::atomic<int> live{0};  // destructions minus copies, beyond the first object
    {
      marks_destruction m(&live);
      live.fetch_sub(1);  // m itself
      auto f = grain::async([m] { return 1; });
      EXPECT_EQ(f.get(), 1);
      // Every copy inside the task is destroyed by now; only m itself is left.
      EXPECT_EQ(live.load(), -1) << "round " << i;
    }
    EXPECT_EQ(live.load(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, CompletionWord, grain::test::worker_counts(),
                         grain::test::worker_count_name);

}  // namespace
