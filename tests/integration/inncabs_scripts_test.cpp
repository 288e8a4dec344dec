// scripts/characterise (Grubel, Lelbach, Kaiser 2016's speedup, T_o and T_w per core for 1..P workers) and
// scripts/bench-apps (the Grubel, Lelbach, Kaiser 2016 applications for grain, TBB and OpenMP) on tiny inputs: they
// run, their figures are the counters' (finite, T_w zero on one worker, speedup 1 on one),
// every system's result equals the serial one, and bad usage is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/run_command.hpp"

namespace {

namespace fs = std::filesystem;
using grain::test::contains;

const std::string root = GRAIN_SOURCE_DIR;
const std::string build = GRAIN_BINARY_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The number after "key": in the first row object of characterise.json that has workers == w.
double field(const std::string& json, int w, const std::string& key) {
  const std::string tag = "\"workers\": " + std::to_string(w);
  auto row_end = json.find(tag);
  if (row_end == std::string::npos) return NAN;
  const auto row_begin = json.rfind('{', row_end);
  row_end = json.find('}', row_end);
  const std::string row = json.substr(row_begin, row_end - row_begin);
  const auto k = row.find("\"" + key + "\": ");
  if (k == std::string::npos) return NAN;
  return std::stod(row.substr(k + key.size() + 4));
}

TEST(InncabsScripts, CharacteriseReportsSpeedupOverheadAndInflationPerCore) {
  if (!fs::exists(build + "/bin/grain-pyramids")) GTEST_SKIP() << "grain-pyramids is not built";
  const fs::path out = fs::temp_directory_path() / "grain-characterise-test";
  fs::remove_all(out);
  const auto r = grain::test::run_command(
      root + "/scripts/characterise pyramids --tiny --runs=2 --build-dir=" + build +
      " --out=" + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "| workers | T_n | speedup T1/Tn | T_o per core | T_w per core"))
      << r.output;
  const std::string json = slurp(out / "characterise.json");
  ASSERT_FALSE(json.empty());
  EXPECT_DOUBLE_EQ(field(json, 1, "speedup"), 1.0) << json;
  EXPECT_DOUBLE_EQ(field(json, 1, "T_w_ns"), 0.0) << json;
  for (const int w : {1, 2}) {
    EXPECT_GT(field(json, w, "time_s"), 0.0) << json;
    EXPECT_GT(field(json, w, "t_d_ns"), 0.0) << json;  // the counters were read
    EXPECT_GE(field(json, w, "T_o_ns"), 0.0) << json;
    EXPECT_GT(field(json, w, "tasks"), 0.0) << json;
  }
  EXPECT_TRUE(std::isfinite(field(json, 2, "T_w_ns"))) << "t_d1 from the calibration run\n" << json;
  EXPECT_TRUE(contains(slurp(out / "calibration.json"), "\"characterise\""))
      << "the one-worker run saved t_d1";
  // Two runs for each of two worker counts, one line each plus the header.
  const std::string csv = slurp(out / "characterise.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5) << csv;
  fs::remove_all(out);
}

TEST(InncabsScripts, CharacteriseRefusesBadUsage) {
  for (const std::string args : {"frobnicate", "pyramids --workers=0", "pyramids --workers=a,b",
                                 "pyramids --runs=0", "pyramids --max-workers=0"}) {
    const auto r =
        grain::test::run_command(root + "/scripts/characterise " + args + " --build-dir=" + build);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "scripts/characterise: ")) << r.output;
  }
  // An argument the application refuses fails the run (exit 1) with the application's message.
  if (fs::exists(build + "/bin/grain-pyramids")) {
    const auto r = grain::test::run_command(
        root + "/scripts/characterise pyramids --runs=1 --no-plot --build-dir=" + build +
        " -- --n=1");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "bad argument '--n=1'")) << r.output;
  }
}

// Every built system's result equals the serial one (bench-apps exits 1 otherwise).
TEST(InncabsScripts, BenchAppsAgreeWithSerial) {
  if (!fs::exists(build + "/bin/bench-apps-serial") || !fs::exists(build + "/bin/bench-apps-grain"))
    GTEST_SKIP() << "bench-apps-serial / bench-apps-grain are not built";
  const auto r =
      grain::test::run_command(root + "/scripts/bench-apps --quick --build-dir=" + build);
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* app : {"| alignment (", "| pyramids (", "| uts ("})
    EXPECT_TRUE(contains(r.output, app)) << r.output;
  EXPECT_TRUE(contains(r.output, "| grain (async) | 2 |")) << r.output;
  EXPECT_FALSE(contains(r.output, "FAILED")) << r.output;
}

}  // namespace
