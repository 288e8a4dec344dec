// grain-stencil changes its partition size (the knob stencil.nx) between time steps and stays
// exact: from the command line, from --repartition-at, and from a Lua policy while it runs.
// Each step is reported as an `iteration` event and as /app/iteration-time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>

#include "stencil_run.hpp"

namespace grain::test::stencil {
namespace {

using StencilRepartition = program_test;

// A file under the temporary directory, removed at the end.
struct temp_file {
  explicit temp_file(const std::string& name, const std::string& text = "")
      : path(fs::temp_directory_path() /
             ("grain-stencil-" + std::to_string(::getpid()) + "-" + name)) {
    if (!text.empty()) std::ofstream(path) << text;
  }
  ~temp_file() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  fs::path path;
};

TEST_F(StencilRepartition, ScheduledChangesVerify) {
  // Finer, coarser, uneven (7 and 333 do not divide 2000), one partition, single points.
  auto r =
      run("--nx=50 --points=2000 --nt=30 --verify --print-steps --repartition-at=3:7 "
          "--repartition-at=6:333 --repartition-at=10:2000 --repartition-at=14:1 "
          "--repartition-at=17:64 --grain:threads=2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "verify: OK: max |error| 0 over 2000 points")) << r.output;
  for (const char* s : {"nx 50 -> 7 before step 3", "nx 7 -> 333 before step 6",
                        "nx 333 -> 2000 before step 10", "nx 2000 -> 1 before step 14",
                        "nx 1 -> 64 before step 17", "step 2: ", "nx 50, 40 partitions",
                        "step 3: ", "nx 7, 286 partitions", "nx 333, 7 partitions",
                        "nx 2000, 1 partitions", "nx 1, 2000 partitions", "nx 64, 32 partitions"})
    EXPECT_TRUE(contains(r.output, s)) << "no '" << s << "' in\n" << r.output;
}

TEST_F(StencilRepartition, ChangesWithAWindowOfAllStepsAndOneStep) {
  for (const char* window :
       {"--window=0", "--window=1", "--window=3 --check-every=4", "--submit-chunk=4"}) {
    auto r = run(std::string("--nx=10 --np=30 --nt=20 --verify --repartition-at=5:13 ") + window +
                 " --grain:threads=2");
    EXPECT_EQ(r.status, 0) << window << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "nx 10 -> 13 before step 5")) << window << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "verify: OK")) << window << "\n" << r.output;
  }
}

TEST_F(StencilRepartition, KnobOnTheCommandLineSetsTheStartingSize) {
  auto r = run("--nx=10 --np=30 --nt=8 --verify --grain:knob=stencil.nx=7 --grain:threads=2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "nx 7 (43 partitions)")) << r.output;
  EXPECT_TRUE(contains(r.output, "verify: OK")) << r.output;
}

// The real thing: a policy changes the knob while the stencil runs. The policy thread reacts
// to an event a few steps later, so the step of the change is not known in advance; the run is
// long (20,000 short steps) so that the change surely lands inside it.
TEST_F(StencilRepartition, LuaPolicyChangesThePartitionSizeWhileItRuns) {
  temp_file policy("policy.lua", R"(
local state = 0
grain.on("iteration", function(ev)
  local nx = grain.knob("stencil.nx")
  if state == 0 and ev.step >= 2 then
    state = 1
    nx:set(7, "test: finer")
  elseif state == 1 and ev.nx == 7 then
    state = 2
    nx:set(333, "test: coarser, uneven")
  end
end)
)");
  temp_file summary("summary.json");
  auto r = run("--nx=50 --points=2000 --nt=20000 --verify --grain:threads=2 --grain:policy=" +
               policy.path.string() + " --grain:summary=" + summary.path.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("nx 50 -> 7 before step [0-9]+\n")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("nx 7 -> 333 before step [0-9]+\n")))
      << r.output;
  EXPECT_TRUE(contains(r.output, "final nx 333 (7 partitions)")) << r.output;
  EXPECT_TRUE(contains(r.output, "verify: OK: max |error| 0 over 2000 points")) << r.output;

  // Every step was an event, and the policy's decisions are in the summary.
  std::ifstream in(summary.path);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(json, "\"/events{locality#0/total}/count/iteration\": 20000")) << json;
  EXPECT_TRUE(std::regex_search(json, std::regex("\"/app/iteration-time\": [0-9]"))) << json;
  EXPECT_TRUE(contains(json, "test: coarser, uneven")) << json;
}

}  // namespace
}  // namespace grain::test::stencil
