// grain-stencil (apps/stencil) as a user runs it: the futurized ring matches a hand computation
// and the serial computation for many partitionings, and bad options are rejected with a message.
#include <string>

#include "stencil_run.hpp"

namespace grain::test::stencil {
namespace {

using Stencil = program_test;

// The ring itself, computed by hand: u = {0, 1, 2, 3}; with k = 0.5, dt = dx = 1 each point
// becomes the mean of its neighbours: {(3+1)/2, (0+2)/2, (1+3)/2, (2+0)/2}.
TEST_F(Stencil, OneStepOfASmallRingByHand) {
  auto r = run("--nx=2 --np=2 --nt=1 --results --grain:threads=2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "U[0] = {2, 1}")) << r.output;
  EXPECT_TRUE(contains(r.output, "U[1] = {2, 1}")) << r.output;
  // With another coefficient the middle point counts: 1 + 0.25 * (0 - 2 + 2) = 1.
  r = run("--nx=4 --np=1 --nt=1 --k=0.25 --results --grain:threads=1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "U[0] = {1, 1, 2, 2}")) << r.output;
}

TEST_F(Stencil, MatchesTheSerialComputation) {
  // Many partitions, one partition, points of one element, a partition per worker, uneven.
  for (const char* args :
       {"--nx=10 --np=37 --nt=20", "--nx=1000 --np=1 --nt=15", "--nx=1 --np=50 --nt=12",
        "--nx=500 --np=2 --nt=9", "--nx=64 --points=1000 --nt=11", "--nx=999 --points=1000 --nt=5",
        "--nx=7 --np=13 --nt=0", "--nx=100 --np=40 --nt=30 --window=0",
        "--nx=100 --np=40 --nt=30 --window=1", "--nx=3 --points=100 --nt=40 --window=5",
        "--nx=4 --points=100 --nt=40 --window=1 --max-window=7",
        "--nx=2 --points=999 --nt=7 --submit-chunk=7", "--nx=5 --np=64 --nt=9 --submit-chunk=0"}) {
    for (const char* threads : {"--grain:threads=1", "--grain:threads=2"}) {
      auto r = run(std::string(args) + " --verify " + threads);
      EXPECT_EQ(r.status, 0) << args << " " << threads << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "verify: OK: max |error| 0")) << args << "\n" << r.output;
    }
  }
}

TEST_F(Stencil, RepeatedRunsAllVerify) {
  auto r =
      run("--nx=50 --np=20 --nt=10 --repeat=3 --verify --repartition-at=4:9 "
          "--grain:threads=2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "run 3:")) << r.output;
  EXPECT_TRUE(contains(r.output, "median of 3 runs")) << r.output;
  EXPECT_TRUE(contains(r.output, "verify: OK")) << r.output;
}

TEST_F(Stencil, ReportsEveryStep) {
  auto r = run("--nx=10 --np=8 --nt=6 --print-steps --grain:threads=2");
  ASSERT_EQ(r.status, 0) << r.output;
  for (int s = 0; s < 6; ++s)
    EXPECT_TRUE(contains(r.output, "step " + std::to_string(s) + ": ")) << r.output;
  EXPECT_TRUE(contains(r.output, "nx 10, 8 partitions")) << r.output;
  EXPECT_TRUE(contains(r.output, "OS_Threads,Execution_Time_sec,Grid_Points,Iterations\n2,"))
      << r.output;
}

// A run whose task throws (here: the point arrays, which no machine can allocate) does not
// hang, and the error reaches main.
TEST_F(Stencil, AFailingTaskIsReported) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on an impossible allocation instead of throwing";
#endif
  for (const char* np : {"--np=1", "--np=3"}) {
    auto r = run(std::string("--nx=1000000000000000 ") + np + " --nt=3 --grain:threads=2");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "grain-stencil: error: std::bad_alloc")) << r.output;
  }
}

TEST_F(Stencil, BadOptionsAreErrors) {
  struct bad {
    const char* args;
    const char* message;
  };
  for (const bad& b :
       {bad{"--frobnicate", "unknown option '--frobnicate'"},
        bad{"--nx=0", "--nx must be at least 1, got 0"},
        bad{"--np=0", "--np must be at least 1, got 0"},
        bad{"--nx=ten", "--nx needs a non-negative integer, got 'ten'"},
        bad{"--nx=-5", "--nx needs a non-negative integer, got '-5'"},
        bad{"--nt", "--nt needs a value"}, bad{"--np=3 --points=30", "either --np or --points"},
        bad{"--nx=50 --points=20", "--nx=50 is larger than --points=20"},
        bad{"--k=abc", "--k needs a finite number"}, bad{"--verify=1", "--verify takes no value"},
        bad{"--nt=5 --repartition-at=5:2", "is not below --nt=5"},
        bad{"--nt=5 --repartition-at=2", "needs STEP:NX"},
        bad{"--nx=10 --np=10 --repartition-at=1:101", "larger than the 100 points"},
        bad{"--check-every=0", "--check-every must be at least 1"},
        bad{"--settle=one", "--settle needs a non-negative integer, got 'one'"},
        bad{"--window=3 --max-window=2", "--max-window=2 is smaller than --window=3"}}) {
    auto r = run(std::string(b.args) + " --grain:threads=1");
    EXPECT_EQ(r.status, 2) << b.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, b.message)) << b.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "usage: grain-stencil")) << b.args << "\n" << r.output;
  }
  // The knob's range is [1, total points].
  auto r = run("--nx=10 --np=10 --grain:knob=stencil.nx=101 --grain:threads=1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "stencil.nx")) << r.output;
  EXPECT_TRUE(contains(r.output, "[1, 100]")) << r.output;
}

}  // namespace
}  // namespace grain::test::stencil
