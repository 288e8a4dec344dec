// launch::adaptive: the decision mechanics (inline short kinds, spawn long ones, change the
// decision when a kind's duration changes), correctness, options and t_o.
//
// Decisions are observed on ONE worker from inside a task: a spawned child cannot run before
// its parent waits (there is no other worker to steal it), so "ready right after async
// returned" means "ran inline". Durations are unambiguous: no work vs 2 ms of busy work, with
// t_o fixed at 100 ns and inline.lambda at 100 (threshold 10 us). A kind's first run may be
// slow (cold caches), so a short kind is allowed a few spawned calls before it is inlined.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/spin.hpp"
#include "grain/async.hpp"
#include "grain/clock.hpp"
#include "grain/detail/task_overhead.hpp"
#include "grain/knob.hpp"
#include "grain/options.hpp"
#include "runtime_fixture.hpp"

using grain::launch;
using grain::test::start_runtime;

namespace {

constexpr std::uint64_t long_ns = 2'000'000;  // far above the 1 us threshold

using grain::test::spin_ns;

std::unique_ptr<grain::runtime_core> one_worker(double lambda = 100) {
  auto rt = start_runtime({"--grain:threads=1", "--grain:task-overhead=100"});
  grain::knobs().at("inline.lambda").set(lambda, "test");
  return rt;
}

// Launch `f` adaptively inside a task; true if it ran inline. The child is always joined.
template <class F>
bool ran_inline(F& f) {
  grain::future<int> c = grain::async(launch::adaptive, f);
  const bool ready = c.is_ready();
  EXPECT_EQ(c.get(), 7);
  return ready;
}

// Index of the first of `max` calls whose decision is `want`, or -1.
template <class F>
int first_call_with(F& f, bool want, int max) {
  for (int i = 0; i < max; ++i)
    if (ran_inline(f) == want) return i;
  return -1;
}

}  // namespace

TEST(AdaptiveInlining, ShortKindIsInlinedLongKindIsSpawned) {
  auto rt = one_worker();
  grain::async([] {
    auto shorty = grain::annotate("test-short", [] { return 7; });
    auto longy = grain::annotate("test-long", [] {
      spin_ns(long_ns);
      return 7;
    });
    EXPECT_FALSE(ran_inline(shorty)) << "an unknown kind is spawned (and measured)";
    EXPECT_FALSE(ran_inline(longy));
    EXPECT_GE(first_call_with(shorty, true, 50), 0) << "a short kind must become inlined";
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(ran_inline(shorty)) << "call " << i;
      EXPECT_FALSE(ran_inline(longy)) << "call " << i;
    }
  }).get();
}

TEST(AdaptiveInlining, DecisionFollowsAChangeOfDuration) {
  auto rt = one_worker();
  grain::async([] {
    std::uint64_t work = 0;
    auto kind = grain::annotate("test-changing", [&work] {
      spin_ns(work);
      return 7;
    });
    EXPECT_GE(first_call_with(kind, true, 50), 0);  // learn: short
    // short -> long: an inlined call is re-timed with probability 1/32; 400 calls without one
    // has probability (31/32)^400 < 1e-5.
    work = long_ns;
    const int to_spawn = first_call_with(kind, false, 400);
    EXPECT_GE(to_spawn, 0) << "a kind that became long must be spawned again";
    EXPECT_FALSE(ran_inline(kind));
    // long -> short: spawned calls are all timed; the estimate decays below the threshold.
    work = 0;
    const int to_inline = first_call_with(kind, true, 200);
    EXPECT_GE(to_inline, 0) << "a kind that became short must be inlined again";
    EXPECT_TRUE(ran_inline(kind));
  }).get();
}

TEST(AdaptiveInlining, LambdaZeroNeverInlines) {
  auto rt = one_worker(0);
  grain::async([] {
    auto shorty = grain::annotate("test-short-lambda0", [] { return 7; });
    EXPECT_EQ(first_call_with(shorty, true, 100), -1);
  }).get();
  // And raising lambda while running takes effect at the next launch.
  grain::knobs().at("inline.lambda").set(100, "test");
  grain::async([] {
    auto shorty = grain::annotate("test-short-lambda0", [] { return 7; });
    EXPECT_GE(first_call_with(shorty, true, 50), 0);
  }).get();
}

namespace {
// One kind on two levels: level 1 is long and launches level 0, which is short.
struct node {
  int level;
  bool* inner_inline;
  int operator()() const {
    if (level == 0) return 7;
    spin_ns(long_ns);
    auto f = grain::async(launch::adaptive, node{0, inner_inline});
    *inner_inline = f.is_ready();
    return f.get();
  }
};
}  // namespace

TEST(AdaptiveInlining, DepthSeparatesLevelsOfOneKind) {
  auto rt = one_worker();
  grain::async([] {
    bool inner_inline = false;
    node outer{1, &inner_inline};
    for (int i = 0; i < 50 && !inner_inline; ++i) ran_inline(outer);  // learns both levels
    for (int i = 0; i < 3; ++i) {
      EXPECT_FALSE(ran_inline(outer)) << "the long level is spawned";
      EXPECT_TRUE(inner_inline) << "the short level of the same kind is inlined";
    }
  }).get();
}

TEST(AdaptiveInlining, ResultsAndExceptionsSpawnedOrInlined) {
  auto rt = start_runtime({"--grain:threads=2", "--grain:task-overhead=100"});
  grain::knobs().at("inline.lambda").set(100, "test");
  grain::async([] {
    auto thrower = grain::annotate("test-thrower", [](int i) -> int {
      throw std::runtime_error("boom " + std::to_string(i));
    });
    for (int i = 0; i < 50; ++i) {
      auto f = grain::async(launch::adaptive, thrower, i);
      try {
        (void)f.get();
        ADD_FAILURE() << "no exception at call " << i;
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "boom " + std::to_string(i));
      }
    }
    auto square = grain::annotate("test-square", [](int i) { return i * i; });
    for (int i = 0; i < 200; ++i) EXPECT_EQ(grain::async(launch::adaptive, square, i).get(), i * i);
    auto nothing = grain::annotate("test-void", [] {});
    for (int i = 0; i < 50; ++i) grain::async(launch::adaptive, nothing).get();
  }).get();
}

namespace {
long fib_serial(int n) {
  return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}
long fib(int n) {
  if (n < 2) return n;
  auto a = grain::async(launch::adaptive, grain::annotate("test-fib", fib), n - 1);
  long b = fib(n - 2);
  return a.get() + b;
}
}  // namespace

TEST(AdaptiveInlining, NestedRecursionIsCorrect) {
  auto rt = start_runtime({"--grain:threads=2"});  // measured t_o, default lambda
  for (int n : {0, 1, 2, 10, 20, 22})
    EXPECT_EQ(grain::async(launch::adaptive, [n] { return fib(n); }).get(), fib_serial(n)) << n;
}

TEST(AdaptiveInlining, FromOutsideATask) {
  auto rt = start_runtime({"--grain:threads=2", "--grain:task-overhead=100"});
  grain::knobs().at("inline.lambda").set(100, "test");
  const auto me = std::this_thread::get_id();
  std::thread::id ran_on;
  auto kind = grain::annotate("test-outside", [&ran_on](int i) {
    ran_on = std::this_thread::get_id();
    return i + 1;
  });
  EXPECT_EQ(grain::async(launch::adaptive, kind, 1).get(), 2);
  EXPECT_NE(ran_on, me) << "unknown kind: spawned onto a worker";
  for (int i = 0; i < 50 && ran_on != me; ++i) grain::async(launch::adaptive, kind, i).get();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(grain::async(launch::adaptive, kind, i).get(), i + 1);
    EXPECT_EQ(ran_on, me) << "short kind: run inline by the calling thread";
  }
}

TEST(AdaptiveInlining, InlineOptionSetsTheDefaultPolicy) {
  const launch before = grain::detail::default_policy();
  {
    auto rt = start_runtime({"--grain:threads=1", "--grain:inline=adaptive"});
    EXPECT_EQ(grain::detail::default_policy(), launch::adaptive);
    EXPECT_EQ(grain::async([] { return 3; }).get(), 3);
  }
  EXPECT_EQ(grain::detail::default_policy(), before) << "restored when the runtime stops";
  {
    auto rt = start_runtime({"--grain:threads=1", "--grain:inline=async"});
    EXPECT_EQ(grain::detail::default_policy(), launch::async);
  }
  try {
    start_runtime({"--grain:threads=1", "--grain:inline=sometimes"});
    ADD_FAILURE() << "no error for --grain:inline=sometimes";
  } catch (const grain::option_error& e) {
    EXPECT_NE(std::string(e.what()).find("adaptive and async"), std::string::npos) << e.what();
  }
}

TEST(AdaptiveInlining, TaskOverheadIsMeasuredOrGiven) {
  {
    auto rt = start_runtime({"--grain:threads=1", "--grain:task-overhead=123.5"});
    EXPECT_EQ(grain::detail::task_overhead_ns(), 123.5);
  }
  {
    auto rt = start_runtime({"--grain:threads=1"});
    const double t_o = grain::detail::task_overhead_ns();
    EXPECT_GT(t_o, 0);
    EXPECT_NE(t_o, 123.5) << "a runtime without the option uses the measurement";
    // Knobs exist before any extension and start at their defaults.
    EXPECT_EQ(grain::knobs().at("inline.lambda").value(),
              grain::knobs().at("inline.lambda").default_value());
    EXPECT_GT(grain::knobs().at("loop.lambda").value(), 0);
  }
  for (const char* bad :
       {"--grain:task-overhead=abc", "--grain:task-overhead=0", "--grain:task-overhead=-5"})
    EXPECT_THROW(start_runtime({"--grain:threads=1", bad}), grain::option_error) << bad;
}

TEST(AdaptiveInlining, SpawnsAShortKindWhenAWorkerStarves) {
  // Lazy splitting: a learned-short kind is inlined while the other worker is busy, but spawned
  // when that worker sleeps for want of work and this worker's queue has nothing to steal.
  auto rt = start_runtime({"--grain:threads=2", "--grain:task-overhead=100"});
  grain::knobs().at("inline.lambda").set(100, "test");
  std::atomic<bool> release{false};
  grain::async([&release] {
    auto busy = grain::async([&release] {  // occupies the other worker (or is run here later)
      while (!release.load()) std::this_thread::yield();
    });
    auto shorty = grain::annotate("test-lazy", [] { return 7; });
    EXPECT_GE(first_call_with(shorty, true, 50), 0) << "learned short while nobody starves";
    release = true;
    busy.get();
    // Now the other worker runs out of work and goes to sleep (after a few dozen spins). Give
    // it time between calls; a spawned call wakes it, so it may have to fall asleep again.
    int spawned = 0;
    for (int i = 0; i < 200 && spawned == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (!ran_inline(shorty)) ++spawned;
    }
    EXPECT_GT(spawned, 0) << "a starving worker must get the short kind's calls to steal";
  }).get();
}
