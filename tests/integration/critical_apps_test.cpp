// grain-cholesky and grain-mergesort (apps/cholesky, apps/mergesort; docs/critical-pools.md)
// as a user runs them: right results for every shape (the apps exit 1 on a residual over 1e-12
// or an output that is not the sorted input) with the critical tasks on their own pool, at
// high priority, or nowhere special, and bad options refused with a message.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/run_command.hpp"

namespace {

using grain::test::contains;

std::string program(const char* name) {
  return std::string(GRAIN_BINARY_DIR) + "/bin/" + name;
}

grain::test::command_result run(const char* name, const std::string& args) {
  return grain::test::run_command(program(name) + " " + args);
}

// How the critical tasks are placed: nowhere, on a pool of one of the two workers, at high
// priority in the one pool.
const char* const placements[] = {
    "--grain:threads=2",
    "--grain:threads=2 --grain:pools=critical:1 --critical-via=pool",
    "--grain:threads=2 --critical-via=priority",
};

class CriticalApps : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* p : {"grain-cholesky", "grain-mergesort"})
      if (!std::filesystem::exists(program(p))) GTEST_SKIP() << program(p) << " is not built";
  }
};

TEST_F(CriticalApps, CholeskyResidualIsSmallForSizesAndRaggedTiles) {
  // (n, b): one tile, b dividing n, ragged last tiles, b > n, 1×1 tiles.
  const char* const shapes[] = {"--n=1 --b=1",    "--n=7 --b=3",    "--n=64 --b=16",
                                "--n=100 --b=32", "--n=257 --b=64", "--n=200 --b=512",
                                "--n=24 --b=1"};
  for (const char* place : placements) {
    const std::string crit = contains(place, "critical-via") ? " --critical=potrf,trsm" : "";
    for (const char* shape : shapes) {
      auto r = run("grain-cholesky", std::string(shape) + crit + " " + place);
      EXPECT_EQ(r.status, 0) << shape << " " << place << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "residual ")) << r.output;
    }
  }
}

TEST_F(CriticalApps, CholeskyReportsWhereTheCriticalTasksRan) {
  auto r = run("grain-cholesky",
               "--n=128 --b=32 --critical=potrf --grain:threads=2 --grain:pools=critical:1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "pools critical:1 default:1")) << r.output;
  EXPECT_TRUE(contains(r.output, "critical potrf via pool")) << r.output;
  EXPECT_TRUE(contains(r.output, "4 tiles")) << r.output;
}

TEST_F(CriticalApps, CholeskyPeerIsTheThreadedDpotrfInTheSameRun) {
  auto r = run("grain-cholesky", "--n=300 --b=64 --peer --grain:threads=2");
  if (contains(r.output, "threaded OpenBLAS not loadable")) GTEST_SKIP() << r.output;
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "dpotrf(n=300) threaded OpenBLAS, 2 threads")) << r.output;
}

TEST_F(CriticalApps, CholeskyRefusesBadOptions) {
  for (const char* bad : {"--n=0", "--b=x", "--critical=lu", "--critical=", "--critical-via=hi",
                          "--check=maybe", "--size=4"}) {
    auto r = run("grain-cholesky", std::string(bad) + " --grain:threads=2");
    EXPECT_EQ(r.status, 2) << bad << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "usage: grain-cholesky")) << r.output;
  }
  // Critical tasks routed to a pool that was not made: the pools are named.
  auto r = run("grain-cholesky", "--critical=potrf --grain:threads=2");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "critical")) << r.output;
}

TEST_F(CriticalApps, MergesortSortsAdversarialInputs) {
  for (const char* place : placements) {
    const std::string crit = contains(place, "critical-via") ? " --critical=merge" : "";
    for (const char* input : {"random", "sorted", "reverse", "equal", "few", "organ", "sawtooth"}) {
      auto r = run("grain-mergesort",
                   std::string("--n=100003 --leaf=997 --input=") + input + crit + " " + place);
      EXPECT_EQ(r.status, 0) << input << " " << place << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "verified")) << r.output;
    }
  }
}

TEST_F(CriticalApps, MergesortSortsTinyAndOddSizes) {
  for (const char* size : {"0", "1", "2", "3", "17", "1001"})
    for (const char* leaf : {"1", "2", "5"}) {
      auto r =
          run("grain-mergesort", std::string("--input=random --n=") + size + " --leaf=" + leaf +
                                     " --critical=merge,split " + placements[1]);
      EXPECT_EQ(r.status, 0) << size << " " << leaf << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "verified")) << r.output;
    }
}

// The policy that moves workers between the pools (policies-lua/critical_pool.lua) on a real
// program: whatever it decides while the sort runs, the result stays right.
TEST_F(CriticalApps, MergesortStaysRightWhileThePolicyMovesWorkers) {
  auto r = run("grain-mergesort",
               "--n=2000000 --leaf=2000 --repeat=3 --critical=merge --grain:threads=4 "
               "--grain:oversubscribe --grain:pools=critical:1 --grain:sample-interval=2 "
               "--grain:policy=" GRAIN_SOURCE_DIR "/policies-lua/critical_pool.lua");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "verified")) << r.output;
}

TEST_F(CriticalApps, MergesortDataflowFormSortsAdversarialInputs) {
  for (const char* input : {"random", "sorted", "reverse", "equal", "few", "organ", "sawtooth"}) {
    auto r = run("grain-mergesort", std::string("--form=dataflow --n=100003 --leaf=997 --input=") +
                                        input + " --critical=merge " + placements[1]);
    EXPECT_EQ(r.status, 0) << input << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "dataflow) in")) << r.output;
    EXPECT_TRUE(contains(r.output, "verified")) << r.output;
  }
}

// --grain:critical=auto on the applications: the runtime finds the critical kinds and the
// results stay right; merge sort's longest path is a leaf and its chain of merges.
TEST_F(CriticalApps, AutoDetectedCriticalTasksKeepResultsRight) {
  const std::string autoflags =
      " --critical=auto --grain:threads=2 --grain:pools=critical:1 --grain:critical=auto"
      " --grain:critical-window=5";
  auto c = run("grain-cholesky", "--n=512 --b=64 --repeat=3" + autoflags);
  EXPECT_EQ(c.status, 0) << c.output;
  EXPECT_TRUE(contains(c.output, "critical auto (found ")) << c.output;
  auto m = run("grain-mergesort", "--form=dataflow --n=2000000 --leaf=5000 --repeat=3" + autoflags);
  EXPECT_EQ(m.status, 0) << m.output;
  EXPECT_TRUE(contains(m.output, "critical auto (found merge)")) << m.output;
  // Without the runtime's detection the apps refuse --critical=auto.
  auto r = run("grain-mergesort", "--critical=auto --grain:threads=2");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "needs --grain:critical=auto")) << r.output;
}

TEST_F(CriticalApps, MergesortRefusesBadOptions) {
  for (const char* bad : {"--input=zigzag", "--leaf=0", "--n=-1", "--critical=quick", "--repeat=0",
                          "--x", "--form=tree"}) {
    auto r = run("grain-mergesort", std::string(bad) + " --grain:threads=2");
    EXPECT_EQ(r.status, 2) << bad << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "usage: grain-mergesort")) << r.output;
  }
}

}  // namespace
