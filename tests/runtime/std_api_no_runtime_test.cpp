// A program that calls grain::async with launch::async | launch::deferred but never started a
// grain::runtime runs every task on the calling thread: it is told so, once, on stderr. Each
// case runs in a process of its own (a death test that exits normally), in which no runtime
// ever ran and the warning was not yet given.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "grain/async.hpp"

namespace {

const std::string warning = "no grain::runtime is running";

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Runs three tasks with a policy; exits 0 when each ran on this thread and gave its result.
[[noreturn]] void run_without_runtime(grain::launch policy) {
  const std::thread::id me = std::this_thread::get_id();
  bool ok = true;
  for (int i = 0; i < 3; ++i) {
    auto f = grain::async(policy, [me, i] { return std::this_thread::get_id() == me ? i : -1; });
    ok = ok && f.get() == i;
  }
  std::exit(ok ? 0 : 1);
}

}  // namespace

TEST(StdApiNoRuntime, AsyncOrDeferredWarnsOnceThatTheWorkRunsHere) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_without_runtime(grain::launch::async | grain::launch::deferred),
              ::testing::ExitedWithCode(0), ::testing::Truly([](const std::string& err) {
                return count_of(err, warning) == 1 &&
                       err.find("runs the work on the calling thread") != std::string::npos;
              }));
  EXPECT_EXIT(run_without_runtime(grain::launch::async | grain::launch::sync),
              ::testing::ExitedWithCode(0),
              ::testing::Truly([](const std::string& err) { return count_of(err, warning) == 1; }));
}

// deferred and sync ask for the calling thread themselves: nothing to say.
TEST(StdApiNoRuntime, DeferredOrSyncAloneSayNothing) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_without_runtime(grain::launch::deferred), ::testing::ExitedWithCode(0),
              ::testing::Truly([](const std::string& err) { return count_of(err, warning) == 0; }));
  EXPECT_EXIT(run_without_runtime(grain::launch::sync), ::testing::ExitedWithCode(0),
              ::testing::Truly([](const std::string& err) { return count_of(err, warning) == 0; }));
}
