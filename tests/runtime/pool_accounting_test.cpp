// The live-object accounting behind the runtime fixture's teardown check
// (runtime_fixture.hpp): it must report what a test holds on to, and stop reporting it once
// given back. These tests hold objects on purpose and give them back before they end, so the
// suite itself leaks nothing.
#include <gtest/gtest.h>

#include <atomic>

#include "grain/async.hpp"
#include "grain/detail/pool_accounting.hpp"
#include "grain/future.hpp"
#include "runtime_fixture.hpp"

TEST(PoolAccounting, AFutureHeldPastTeardownIsReportedUntilReleased) {
  const grain::test::pooled_in_use before = grain::test::pooled_now();
  grain::future<int> held;
  {
    auto rt = grain::test::start_runtime({"--grain:threads=2"});
    held = grain::async(grain::launch::async, [] { return 42; });
    held.wait();
  }
  // The task object and the future's state are one pooled block.
  EXPECT_EQ(grain::test::pooled_now().small_blocks - before.small_blocks, 1);
  EXPECT_FALSE(grain::test::pooled_leaks(before).empty());
  held = grain::future<int>();
  EXPECT_EQ(grain::test::pooled_leaks(before), "");
}

TEST(PoolAccounting, ASuspendedUserThreadIsReportedUntilItResumes) {
  auto rt = grain::test::start_runtime({"--grain:threads=1"});
  EXPECT_EQ(grain::detail::fibers_in_use(), 0);
  grain::promise<int> p;
  grain::future<int> inner = p.get_future();
  grain::future<int> outer = grain::async(grain::launch::async, [&] { return inner.get(); });
  EXPECT_TRUE(grain::test::eventually([] { return grain::detail::fibers_in_use() == 1; }))
      << "a user thread suspended in get() holds a fiber: " << grain::detail::fibers_in_use();
  p.set_value(7);
  EXPECT_EQ(outer.get(), 7);
  // Resumed: the loop fiber it resumed on went back before the task went on.
  EXPECT_EQ(grain::detail::fibers_in_use(), 0);
  rt.reset();
  EXPECT_EQ(grain::detail::fibers_in_use(), 0);
}
