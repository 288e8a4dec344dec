// The Grubel, Lelbach, Kaiser 2016 applications as a user runs them (apps/uts grain-uts-sha1, apps/pyramids,
// apps/alignment): standard UTS reproduces the published node counts (small trees, T1, T3);
// Pyramids equals the serial Jacobi for several sizes and cut-offs; Alignment's scores equal
// the serial ones and known hand-computed scores; bad input is refused with a message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/run_command.hpp"

namespace {

using grain::test::command_result;
using grain::test::contains;

std::string program(const char* name) {
  return std::string(GRAIN_BINARY_DIR) + "/bin/" + name;
}

command_result run(const char* name, const std::string& args) {
  return grain::test::run_command(program(name) + " " + args);
}

class InncabsApps : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* p : {"grain-uts-sha1", "grain-pyramids", "grain-alignment"})
      if (!std::filesystem::exists(program(p))) GTEST_SKIP() << program(p) << " is not built";
  }
  std::string temp(const char* name) const {
    return (std::filesystem::temp_directory_path() /
            (std::string("grain-inncabs-") +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + "-" + name))
        .string();
  }
};

// The published counts are in the program; a wrong count exits 1 with "DIFFERS".
TEST_F(InncabsApps, StandardUtsSmallTreesMatchThePublishedCounts) {
  struct tree {
    const char* name;
    const char* expect;
  };
  for (const tree t : {tree{"test-t1", "254 nodes, 201 leaves, depth 3"},
                       tree{"tiny-t1", "944 nodes, 744 leaves, depth 4"},
                       tree{"small-t1", "3987 nodes, 3232 leaves, depth 5"},
                       tree{"test-t3", "371 nodes, 325 leaves, depth 15"},
                       tree{"tiny-t3", "723 nodes, 638 leaves, depth 17"},
                       tree{"small-t3", "4649 nodes, 4092 leaves, depth 62"}}) {
    const auto r =
        run("grain-uts-sha1", std::string("--tree=") + t.name + " --repeat=2 --grain:threads=2");
    EXPECT_EQ(r.status, 0) << t.name << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, t.expect)) << r.output;
    EXPECT_TRUE(contains(r.output, "matches the published count")) << r.output;
  }
}

TEST_F(InncabsApps, StandardUtsT1AndT3MatchThePublishedCounts) {
  auto r = run("grain-uts-sha1", "--tree=T1 --grain:threads=2");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "4130071 nodes, 3305118 leaves, depth 10")) << r.output;
  // T3: 1,572 levels of nested tasks, binomial root with 2,000 children.
  r = run("grain-uts-sha1", "--tree=T3 --grain:threads=2");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "4112897 nodes, 3599034 leaves, depth 1572")) << r.output;
}

// A tree given by its parameters is checked against the serial count; T1's parameters with
// depth 3 are test-t1, so the count is also the published one.
TEST_F(InncabsApps, StandardUtsParameterTreeAndBadTrees) {
  auto r = run("grain-uts-sha1", "--tree=1,3,4,3,0.15625,4,19 --gran=3 --grain:threads=2");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "254 nodes, 201 leaves, depth 3")) << r.output;
  EXPECT_TRUE(contains(r.output, "matches the serial count")) << r.output;
  for (const char* bad : {"--tree=T9", "--tree=7,3,4,3,0.1,4,19", "--tree=1,3,4", "--gran=0",
                          "--repeat=x", "--depth=3"}) {
    r = run("grain-uts-sha1", bad);
    EXPECT_EQ(r.status, 2) << bad << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "bad argument")) << r.output;
  }
}

TEST_F(InncabsApps, PyramidsEqualsSerialJacobi) {
  for (const char* args : {"--n=10 --steps=7 --cutoff=1", "--n=66 --steps=33 --cutoff=50",
                           "--n=101 --steps=77 --cutoff=500", "--n=130 --steps=64 --cutoff=1000",
                           "--n=200 --steps=3 --cutoff=100"}) {
    const auto r = run("grain-pyramids", std::string(args) + " --repeat=2 --grain:threads=2");
    EXPECT_EQ(r.status, 0) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "matches the serial Jacobi")) << r.output;
  }
  for (const char* bad : {"--n=2", "--steps=0", "--cutoff=-1", "--verify=2", "--size=4"}) {
    const auto r = run("grain-pyramids", bad);
    EXPECT_EQ(r.status, 2) << bad << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "bad argument")) << r.output;
  }
}

TEST_F(InncabsApps, AlignmentEqualsSerialAndSurvivesAFastaRoundTrip) {
  auto r =
      run("grain-alignment", "--sequences=24 --length=60 --seed=3 --repeat=2 --grain:threads=2");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "24 sequences")) << r.output;
  EXPECT_TRUE(contains(r.output, "276 pairs")) << r.output;
  EXPECT_TRUE(contains(r.output, "matches the serial scores")) << r.output;
  const auto sum = r.output.substr(r.output.find("score sum"), 20);
  const std::string fasta = temp("set.fasta");
  r = run("grain-alignment", "--sequences=24 --length=60 --seed=3 --write-fasta=" + fasta);
  EXPECT_EQ(r.status, 0) << r.output;
  r = run("grain-alignment", "--input=" + fasta + " --grain:threads=2");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, sum.substr(0, sum.find(';')))) << sum << "\n" << r.output;
  std::filesystem::remove(fasta);
}

// Scores worked out by hand: identical sequences score the sum of BLOSUM62's diagonal; ten W
// against WWWWW K WWWWW is best aligned with one gap (11 W x 11 - (11 + 1) = 98, above the 96
// of matching W with K).
TEST_F(InncabsApps, AlignmentKnownScores) {
  const std::string f1 = temp("same.fasta"), f2 = temp("gap.fasta");
  std::ofstream(f1) << ">a\nHEAGAWGHEE\n>b\nheag\nAWGHEE\n";
  std::ofstream(f2) << ">a\nWWWWWWWWWW\n>b\nWWWWWKWWWWW\n";
  auto r = run("grain-alignment", "--input=" + f1 + " --grain:threads=2");
  EXPECT_TRUE(contains(r.output, "score sum 62;")) << r.output;
  r = run("grain-alignment", "--input=" + f2 + " --grain:threads=2");
  EXPECT_TRUE(contains(r.output, "score sum 98;")) << r.output;
  std::filesystem::remove(f1);
  std::filesystem::remove(f2);
}

TEST_F(InncabsApps, AlignmentRefusesBadInput) {
  const std::string bad = temp("bad.fasta"), one = temp("one.fasta"),
                    headless = temp("nohdr.fasta");
  std::ofstream(bad) << ">a\nHEAG\n>b\nAWJHEE\n";
  std::ofstream(one) << ">a\nHEAG\n";
  std::ofstream(headless) << "HEAG\n>b\nHEAG\n";
  struct tc {
    std::string args, says;
  };
  for (const tc& t : {tc{"--input=" + bad, ":4: 'J' is not one of the 20 standard amino acids"},
                      tc{"--input=" + one, "fewer than two sequences"},
                      tc{"--input=" + headless, ":1: sequence data before the first '>'"},
                      tc{"--input=/nonexistent/x.fasta", "cannot open"},
                      tc{"--sequences=1", "bad argument '--sequences=1'"},
                      tc{"--length=0", "bad argument"}, tc{"--frobnicate", "bad argument"}}) {
    const auto r = run("grain-alignment", t.args);
    EXPECT_EQ(r.status, 2) << t.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, t.says)) << t.args << "\n" << r.output;
  }
  for (const auto& f : {bad, one, headless}) std::filesystem::remove(f);
}

// The std drop-in benchmark: every mode finishes with every meal eaten (exit 1 otherwise), on
// one worker too, where spinning thinkers hold the only worker.
TEST_F(InncabsApps, PhilosophersEatEveryMealInEveryMode) {
  if (!std::filesystem::exists(program("bench-philosophers")))
    GTEST_SKIP() << "bench-philosophers is not built";
  for (const char* mode : {"threads-spin", "threads-sleep", "grain-spin", "grain-sleep"})
    for (const char* threads : {"1", "2"}) {
      const auto r = run("bench-philosophers", std::string("--mode=") + mode +
                                                   " --meals=3 --eat-us=100 --think-us=100 "
                                                   "--grain:threads=" +
                                                   threads);
      EXPECT_EQ(r.status, 0) << mode << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "\"meals\":15,")) << r.output;
    }
  const auto r = run("bench-philosophers", "--mode=fibers");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "bad argument '--mode=fibers'")) << r.output;
}

}  // namespace
