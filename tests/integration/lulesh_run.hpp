#pragma once
// Runs grain-lulesh (apps/lulesh) for the integration tests and reads its report.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/run_command.hpp"

namespace grain::test::lulesh {

inline const std::string program = std::string(GRAIN_BINARY_DIR) + "/bin/grain-lulesh";

// The reference (LLNL's LULESH 2.0, built with g++ -O2 and run with 2 OpenMP threads) to all
// digits: -s 10 and -s 20 run to the stop time.
inline constexpr int s10_iterations = 231;
inline constexpr double s10_energy = 2.7205311684703462e+04;
inline constexpr int s20_iterations = 575;
inline constexpr double s20_energy = 9.6688559815778644e+04;

struct report {
  int status = -1;
  std::string output;
  int iterations = -1;
  double energy = 0;        // all digits
  double max_rel_diff = 1;  // the symmetry test
};

inline double number_after(const std::string& out, const std::string& label) {
  const auto at = out.find(label);
  if (at == std::string::npos) return -1;
  return std::strtod(out.c_str() + at + label.size(), nullptr);
}

// A whole command line (an mpirun of grain-lulesh).
inline report run_command_report(const std::string& command) {
  const command_result c = run_command(command);
  report r;
  r.status = c.status;
  r.output = c.output;
  r.iterations = static_cast<int>(number_after(c.output, "Iteration count     =  "));
  r.energy = number_after(c.output, "Final origin energy (all digits) = ");
  r.max_rel_diff = number_after(c.output, "MaxRelDiff   = ");
  return r;
}

inline report run(const std::string& args) {
  return run_command_report(program + " " + args);
}

// The run reached the reference's iteration count and origin energy (within 1e-9 relative)
// and its energy field is symmetric in x and y.
inline void expect_reference(const report& r, int iterations, double energy) {
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.iterations, iterations) << r.output;
  EXPECT_NEAR(r.energy, energy, 1e-9 * energy) << r.output;
  EXPECT_GE(r.max_rel_diff, 0) << r.output;
  EXPECT_LT(r.max_rel_diff, 1e-10) << r.output;
}

class program_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(program))
      GTEST_SKIP() << program << " is not built (target grain-lulesh)";
  }
};

}  // namespace grain::test::lulesh
