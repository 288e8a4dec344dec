#pragma once
// A runtime per test (only one may run in a process at a time).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grain/ext/runtime_core.hpp"

namespace grain::test {

inline std::unique_ptr<runtime_core> start_runtime(std::vector<std::string> args = {
                                                       "--grain:threads=2"}) {
  return std::make_unique<runtime_core>(args, std::vector<std::unique_ptr<extension>>{}, false);
}

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override { rt = start_runtime(args()); }
  void TearDown() override { rt.reset(); }
  virtual std::vector<std::string> args() const { return {"--grain:threads=2"}; }
  std::unique_ptr<runtime_core> rt;
};

}  // namespace grain::test
