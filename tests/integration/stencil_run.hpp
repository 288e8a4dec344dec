#pragma once
// Runs the grain-stencil program (apps/stencil) for the integration tests.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace grain::test::stencil {

namespace fs = std::filesystem;

inline const std::string program = std::string(GRAIN_BINARY_DIR) + "/bin/grain-stencil";

struct result {
  int status = -1;  // exit status, -1 if it did not exit normally
  std::string output;
};

// grain-stencil with the arguments; stdout and stderr together.
inline result run(const std::string& args) {
  result r;
  std::FILE* p = ::popen((program + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// Skips the test when the program was not built.
class program_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(program)) GTEST_SKIP() << program << " is not built (target grain-stencil)";
  }
};

}  // namespace grain::test::stencil
