// scripts/sweep-grain drives grain-stencil across partition sizes and writes the CSV files and
// Grubel et al. 2015's figures (docs/references.md) (a small, fast sweep; the real one is in
// docs/experiments.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "stencil_run.hpp"

namespace grain::test::stencil {
namespace {

const std::string script = std::string(GRAIN_SOURCE_DIR) + "/scripts/sweep-grain";

result shell(const std::string& cmd) {
  return run_command(cmd);
}

std::size_t lines(const fs::path& p) {
  std::ifstream in(p);
  std::size_t n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

class SweepGrain : public program_test {
 protected:
  void SetUp() override {
    program_test::SetUp();
    if (shell("/usr/bin/python3 -c 'import matplotlib'").status != 0)
      GTEST_SKIP() << "/usr/bin/python3 cannot import matplotlib";
    out_ = fs::temp_directory_path() / ("grain-sweep-" + std::to_string(::getpid()));
    fs::remove_all(out_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(out_, ec);
  }
  fs::path out_;
};

TEST_F(SweepGrain, WritesCsvAndFigures) {
  auto r = shell(script + " --points=20000 --steps=4 --nx=10,700,20000 --workers=1,2 --runs=2" +
                 " --binary=" + program + " --out=" + out_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(lines(out_ / "runs.csv"), 1u + 3 * 2 * 2) << r.output;
  EXPECT_EQ(lines(out_ / "sweep.csv"), 1u + 3 * 2) << r.output;
  std::ifstream in(out_ / "sweep.csv");
  std::string header;
  std::getline(in, header);
  for (const char* col : {"nx", "workers", "time_s", "idle_rate", "t_d_ns", "t_o_ns", "T_o_ns",
                          "t_w_ns", "T_w_ns", "pending_accesses", "pending_misses"})
    EXPECT_TRUE(contains(header, col)) << col << " not in " << header;
  EXPECT_TRUE(contains(r.output, "best static nx with 2 workers: ")) << r.output;
  for (const char* png : {"exec_time.png", "idle_rate.png", "task_times.png", "wait_time.png",
                          "overheads.png", "pending.png"}) {
    ASSERT_TRUE(fs::exists(out_ / png)) << png << "\n" << r.output;
    EXPECT_GT(fs::file_size(out_ / png), 10000u) << png;
  }
  // The figures can be drawn again from the CSV alone.
  fs::remove(out_ / "exec_time.png");
  r = shell(script + " --plot-only --out=" + out_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(out_ / "exec_time.png")) << r.output;
}

TEST_F(SweepGrain, BadArgumentsAndFailedRuns) {
  auto r = shell(script + " --workers=0 --binary=" + program + " --out=" + out_.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--workers must list integers >= 1")) << r.output;
  r = shell(script + " --binary=/no/such/grain-stencil --out=" + out_.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "not found")) << r.output;
  // A run that fails is reported with its output, and the exit status says so.
  r = shell(script + " --points=1000 --steps=2 --nx=10 --workers=1 --runs=1 --no-plots" +
            " --extra=--bogus --binary=" + program + " --out=" + out_.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "unknown option '--bogus'")) << r.output;
}

}  // namespace
}  // namespace grain::test::stencil
