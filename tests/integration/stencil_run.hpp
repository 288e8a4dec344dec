#pragma once
// Runs the grain-stencil program (apps/stencil) for the integration tests.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/run_command.hpp"

namespace grain::test::stencil {

namespace fs = std::filesystem;

inline const std::string program = std::string(GRAIN_BINARY_DIR) + "/bin/grain-stencil";

using result = command_result;

// grain-stencil with the arguments; stdout and stderr together.
inline result run(const std::string& args) {
  return run_command(program + " " + args);
}

// Skips the test when the program was not built.
class program_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(program)) GTEST_SKIP() << program << " is not built (target grain-stencil)";
  }
};

}  // namespace grain::test::stencil
