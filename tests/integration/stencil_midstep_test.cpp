// A running step follows a finer stencil.nx: partitions split what they have left into chunks
// of the new size (apps/stencil/elastic.hpp), and the result is the same bit for bit as
// without the split and as the serial computation.
#include <gtest/gtest.h>

#include <string>

#include "stencil_run.hpp"

namespace grain::test::stencil {
namespace {

using StencilMidStep = program_test;

const char* const split_line = "partitions split while they ran";

// The U[...] lines of --results.
std::string values(const std::string& output) {
  std::string v;
  std::size_t at = 0;
  while ((at = output.find("U[", at)) != std::string::npos) {
    const std::size_t end = output.find('\n', at);
    v += output.substr(at, end - at) + "\n";
    at = end;
  }
  return v;
}

// One worker: the driver task sets the knob right after submitting step 0, before the only
// worker can start its partition, so the partition surely splits.
TEST_F(StencilMidStep, OneCoarsePartitionSplitsAndVerifies) {
  auto r = run("--points=400000 --nx=400000 --nt=4 --verify --midstep-at=0:1000 --grain:threads=1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "verify: OK: max |error| 0 over 400000 points")) << r.output;
  EXPECT_TRUE(contains(r.output, split_line)) << r.output;
  EXPECT_TRUE(contains(r.output, "nx 400000 -> 1000 before step 1")) << r.output;
}

// The same values with and without the split (uneven sizes: 7 does not divide 5000), and the
// switch turns it off.
TEST_F(StencilMidStep, SplitGivesTheSameValuesAsNoSplit) {
  const std::string args =
      "--points=5000 --nx=5000 --nt=3 --results --midstep-at=0:7 --grain:threads=1 ";
  auto split = run(args + "--split=1");
  auto whole = run(args + "--split=0");
  ASSERT_EQ(split.status, 0) << split.output;
  ASSERT_EQ(whole.status, 0) << whole.output;
  EXPECT_TRUE(contains(split.output, split_line)) << split.output;
  EXPECT_FALSE(contains(whole.output, split_line)) << whole.output;
  const std::string v = values(split.output);
  EXPECT_FALSE(v.empty()) << split.output;
  EXPECT_EQ(v, values(whole.output));
}

// Two workers, several mid-step moves finer and coarser, steps in flight: exact.
TEST_F(StencilMidStep, MovesWhileStepsRunVerifyOnTwoWorkers) {
  for (const char* extra : {"", " --window=0", " --settle=0 --settle-init=0"}) {
    auto r = run(std::string("--points=300007 --nx=150000 --nt=12 --verify --midstep-at=0:997 ") +
                 "--midstep-at=3:100000 --midstep-at=6:13 --midstep-at=8:300007 " +
                 "--grain:threads=2" + extra);
    EXPECT_EQ(r.status, 0) << extra << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "verify: OK: max |error| 0 over 300007 points")) << extra << "\n"
                                                                                    << r.output;
  }
}

TEST_F(StencilMidStep, BadOptionsAreErrors) {
  for (const char* bad :
       {"--split=2", "--settle-init=yes", "--midstep-at=3", "--nt=4 --midstep-at=4:2"}) {
    auto r = run(std::string("--nx=10 --np=10 ") + bad);
    EXPECT_EQ(r.status, 2) << bad << "\n" << r.output;
  }
}

}  // namespace
}  // namespace grain::test::stencil
