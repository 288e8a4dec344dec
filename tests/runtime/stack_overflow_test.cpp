// Stacks of user threads (issue 11, item 2): ordinary std::async-style code with large frames
// runs on the default stack, and an overflow is reported as such on every stack — also one a
// large frame jumps over the guard of, and also when so many tasks are suspended that stacks
// come from slabs (beyond the permanent-guard budget of vm.max_map_count).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "common/suspended.hpp"
#include "grain/async.hpp"
#include "grain/detail/config.hpp"
#include "runtime_fixture.hpp"

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
