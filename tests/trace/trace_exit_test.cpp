// std::exit while the runtime runs (from main or from inside a task): the process ends with
// exit's status — not in std::terminate — and the trace recorded so far is written.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "grain/runtime.hpp"
#include "trace_util.hpp"

namespace {

namespace fs = std::filesystem;
using grain::test::fib;

// The death test's child runs this test again from its start: the path must be the same in
// both processes (so not the pid-named temp_path).
fs::path fixed_dir(const std::string& name) {
  return fs::temp_directory_path() / ("grain-trace-exit-" + name);
}

void traced_run_then_exit(const fs::path& dir, bool from_task) {
  grain::runtime rt({"--grain:threads=2", "--grain:trace=" + dir.string()}, false);
  if (grain::async([] { return fib(12); }).get() != 144) std::abort();
  if (from_task)
    grain::async([] { std::exit(4); }).get();
  else
    std::exit(3);
}

TEST(TraceExit, ExitFromMainWritesTheTraceAndKeepsTheStatus) {
  const fs::path dir = fixed_dir("main");
  fs::remove_all(dir);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(traced_run_then_exit(dir, false), ::testing::ExitedWithCode(3),
              "exit\\(\\) while the runtime runs");
  const auto t = grain::instrumentation::read_otf2((dir / "traces.otf2").string());
  EXPECT_GE(grain::test::check_trace(t).task_enters, 143u);
  fs::remove_all(dir);
}

TEST(TraceExit, ExitFromATaskWritesTheTraceAndKeepsTheStatus) {
  const fs::path dir = fixed_dir("task");
  fs::remove_all(dir);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(traced_run_then_exit(dir, true), ::testing::ExitedWithCode(4),
              "exit\\(\\) while the runtime runs");
  const auto t = grain::instrumentation::read_otf2((dir / "traces.otf2").string());
  EXPECT_GE(grain::test::check_trace(t).task_enters, 143u);
  fs::remove_all(dir);
}

}  // namespace
