// Stacks of user threads: ordinary std::async-style code with large frames runs on the default
// stack, and an overflow is reported as such on every stack — also one a large frame jumps over
// the guard of (probed by -fstack-clash-protection, which the library exports to this code, or
// not), a frame that lands in another stack's guard, and when so many tasks are suspended that
// stacks come from slabs (beyond the permanent-guard budget of vm.max_map_count).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "common/suspended.hpp"
#include "grain/async.hpp"
#include "grain/detail/config.hpp"
#include "runtime_fixture.hpp"
#include "stack_pool.hpp"

using grain::test::start_runtime;
using grain::test::with_suspended;

namespace {

// ThreadSanitizer keeps state of its own per user thread and per stack: tens of thousands of
// stacks exhaust its mappings (it fails with ENOMEM, vm.max_map_count), and a recursion
// millions of calls deep overflows its shadow call stack before ours. Those tests run in the
// plain and ASan builds.
#if GRAIN_TSAN
#define SKIP_UNDER_TSAN(why) GTEST_SKIP() << "not under ThreadSanitizer: " << why
#else
#define SKIP_UNDER_TSAN(why) (void)0
#endif

// A frame of ~40 KB, the size of an all-pairs alignment's score rows kept on the stack.
GRAIN_NOINLINE long big_frame(int depth) {
  volatile char rows[40 * 1024];
  rows[0] = static_cast<char>(depth);  // the lowest byte first: a skipping first touch
  rows[sizeof rows - 1] = 1;
  return depth == 0 ? rows[0] : big_frame(depth - 1) + rows[0];
}

// One frame of `bytes`, its far (lowest) end touched first, as a task that puts a large array on
// its stack does. Built with the probes of -fstack-clash-protection, as the library's users are.
GRAIN_NOINLINE int one_frame(std::size_t bytes) {
  auto* p = static_cast<volatile char*>(__builtin_alloca(bytes));
  p[0] = 1;
  p[bytes - 1] = 2;
  return p[0] + p[bytes - 1];
}

// The same built without probes, as code compiled without the flag is: the stack pointer jumps
// every guard and the first touch is far below the stack.
__attribute__((optimize("no-stack-clash-protection"))) GRAIN_NOINLINE int one_unprobed_frame(
    std::size_t bytes) {
  auto* p = static_cast<volatile char*>(__builtin_alloca(bytes));
  p[0] = 1;
  p[bytes - 1] = 2;
  return p[0] + p[bytes - 1];
}

GRAIN_NOINLINE int small_frames(int n) {
  volatile char pad[1024];
  pad[0] = static_cast<char>(n);
  return n == 0 ? pad[0] : small_frames(n - 1) + pad[0];
}

}  // namespace

TEST(Stacks, DefaultStackRunsLargeFramesLikeStdAsync) {
  auto rt = start_runtime({"--grain:threads=2"});
  // 12 frames of 40 KB: 480 KB, where the old 64 KiB default died at the second frame.
  const long expected = big_frame(11);  // on main's own 8 MiB stack
  std::vector<grain::future<long>> v;
  for (int i = 0; i < 8; ++i)
    v.push_back(grain::async(grain::launch::async, [] { return big_frame(11); }));
  for (auto& f : v) EXPECT_EQ(f.get(), expected);
}

TEST(StacksDeathTest, LargeFrameJumpingOverTheGuardPageIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto rt = start_runtime({"--grain:threads=1", "--grain:stack-size=64K"});
        grain::async([] { return big_frame(100); }).get();
      },
      "stack overflow in task");
}

// Frames larger than the 256 KiB guard region: 300 KiB on a 64 KiB stack, 2 MiB and 512 MiB on
// the default 1 MiB one. Unprobed, the 2 MiB frame wrote into a neighbouring mapping and the
// program went on; the 512 MiB one was a bare SIGSEGV.
TEST(StacksDeathTest, FramesLargerThanTheGuardAreReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const struct {
    std::size_t frame;
    const char* stack_size;
  } cases[] = {{300u << 10, "--grain:stack-size=64K"},
               {2u << 20, "--grain:stack-size=1M"},
               {512u << 20, "--grain:stack-size=1M"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.frame);
    EXPECT_DEATH(
        {
          auto rt = start_runtime({"--grain:threads=1", c.stack_size});
          grain::async([&] { return one_frame(c.frame); }).get();
        },
        "grain: stack overflow in task");
  }
}

// The probes do not fault a large frame that fits: 700 KiB runs on the default stack.
TEST(Stacks, ProbedLargeFrameThatFitsRuns) {
  auto rt = start_runtime({"--grain:threads=1"});
  EXPECT_EQ(grain::async([] { return one_frame(700u << 10); }).get(), 3);
}

// Without probes a 512 MiB frame moves the stack pointer far below every guard: the fault lies
// between the stack pointer and the stack, and the frame is too large for any stack.
TEST(StacksDeathTest, UnprobedFrameFarBelowTheStackIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto rt = start_runtime({"--grain:threads=1"});
        grain::async([] { return one_unprobed_frame(512u << 20); }).get();
      },
      "stack overflow in task .* does not fit on any stack.*allocate it on the heap");
}

// A frame that jumps its own guard can land in the guard of another stack (the next mapping
// down is often one): a fault in any stack's reservation is an overflow.
TEST(StacksDeathTest, FaultInAnotherStacksGuardIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto rt = start_runtime({"--grain:threads=1"});
        grain::detail::stack_pool other(64 * 1024);
        const grain::detail::stack s = other.allocate();
        grain::async([&] {
          *static_cast<volatile char*>(static_cast<void*>(s.guard + 4096)) = 1;
        }).get();
      },
      "grain: stack overflow in task");
}

TEST(StacksDeathTest, OverflowAtTheMaximumStackSizeSaysSo) {
  SKIP_UNDER_TSAN("a 256 MiB recursion overflows its shadow call stack first");
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto rt = start_runtime({"--grain:threads=1", "--grain:stack-size=256M"});
        grain::async([] { return small_frames(1 << 30); }).get();
      },
      "at the maximum --grain:stack-size");
}

// With 40,000 tasks suspended the running tasks' stacks come from slabs: overflow there must be
// caught as well, whether by a small or a large frame.
TEST(StacksDeathTest, OverflowIsReportedWhileFortyThousandTasksAreSuspended) {
  SKIP_UNDER_TSAN("40,000 user threads");
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto rt = start_runtime({"--grain:threads=2", "--grain:stack-size=64K"});
        with_suspended(40000, [] { grain::async([] { return small_frames(1 << 20); }).get(); });
      },
      "stack overflow in task");
  EXPECT_DEATH(
      {
        auto rt = start_runtime({"--grain:threads=2", "--grain:stack-size=64K"});
        with_suspended(40000, [] { grain::async([] { return big_frame(1000); }).get(); });
      },
      "stack overflow in task");
}

// A recursion that fits is not disturbed by the guards of slab stacks, and tasks that run on
// slab stacks (every new task while 40,000 hold the guarded ones) compute correctly.
TEST(Stacks, SlabStacksRunDeepRecursionWhileManyAreSuspended) {
  SKIP_UNDER_TSAN("40,000 user threads");
  auto rt = start_runtime({"--grain:threads=2"});
  const int expected = small_frames(500);
  std::atomic<long> sum{0};
  with_suspended(40000, [&] {
    std::vector<grain::future<void>> v;
    for (int i = 0; i < 64; ++i)
      v.push_back(grain::async([&] { sum.fetch_add(small_frames(500) == expected ? 1 : 0); }));
    for (auto& f : v) f.get();
  });
  EXPECT_EQ(sum.load(), 64);
}
