// grain-fib and grain-uts-splitmix (apps/fib, apps/uts) as a user runs them with adaptive inlining: the
// results stay right whatever inlines (the apps check against serial and exit 1 otherwise),
// the options reach the runtime, and bad values are rejected with a message.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/run_command.hpp"

namespace {

using grain::test::command_result;
using grain::test::contains;
using result = command_result;

std::string program(const char* name) {
  return std::string(GRAIN_BINARY_DIR) + "/bin/" + name;
}

result run(const char* name, const std::string& args) {
  return grain::test::run_command(program(name) + " " + args);
}

class InliningApps : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* p : {"grain-fib", "grain-uts-splitmix"})
      if (!std::filesystem::exists(program(p))) GTEST_SKIP() << program(p) << " is not built";
  }
};

TEST_F(InliningApps, FibIsRightWithEveryLambda) {
  for (const char* lambda : {"0", "1", "16", "1000"}) {
    auto r = run("grain-fib", std::string("22 --repeat=2 --grain:threads=2 --grain:inline=adaptive "
                                          "--grain:knob=inline.lambda=") +
                                  lambda);
    EXPECT_EQ(r.status, 0) << lambda << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "fib(22) = 17711")) << r.output;
    EXPECT_TRUE(contains(r.output, "policy adaptive, inline.lambda " + std::string(lambda)))
        << r.output;
  }
  auto r = run("grain-fib", "22 --grain:threads=2");
  EXPECT_TRUE(contains(r.output, "policy async")) << "async stays the default\n" << r.output;
}

TEST_F(InliningApps, UtsIsRightWithEveryPolicy) {
  for (const char* args :
       {"--policy=async", "--policy=adaptive", "--grain:inline=adaptive",
        "--grain:inline=adaptive --grain:knob=inline.lambda=0", "--policy=sync"}) {
    auto r =
        run("grain-uts-splitmix", std::string("--depth=6 --gran=1 --repeat=2 --grain:threads=2 ") + args);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "nodes in")) << r.output;
  }
}

TEST_F(InliningApps, PolicyFileRunsWithTheApps) {
  auto r = run("grain-uts-splitmix", std::string("--depth=7 --gran=1 --repeat=3 --grain:threads=2 "
                                        "--grain:inline=adaptive --grain:policy=") +
                                GRAIN_SOURCE_DIR + "/policies-lua/adaptive_inlining.lua");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "nodes in")) << r.output;
}

TEST_F(InliningApps, BadValuesAreRejected) {
  auto r = run("grain-fib", "20 --grain:inline=sometimes");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(contains(r.output, "valid values are adaptive and async")) << r.output;
  r = run("grain-uts-splitmix", "--policy=eager");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "usage: grain-uts-splitmix")) << r.output;
  r = run("grain-fib", "20 --grain:task-overhead=fast");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(contains(r.output, "nanoseconds")) << r.output;
}

}  // namespace
