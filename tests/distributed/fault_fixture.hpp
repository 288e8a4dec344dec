#pragma once
// What the fault tests share (faults_test.cpp, compact_parcels_test.cpp): a second locality
// to send broken parcels to, the error a call ends with, and the check that the locality
// still serves afterwards. Skipped as one locality.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actions.hpp"

namespace grain::test::dist {

class FaultFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (get_num_localities() < 2) GTEST_SKIP() << "needs two localities (mpirun -np 2)";
    dest = get_num_localities() - 1;
  }
  // The error the call ends with ("" when it succeeded).
  static std::string error_of(future<std::vector<char>> f) {
    try {
      f.get();
    } catch (const remote_exception& e) {
      return e.what();
    }
    return "";
  }
  void still_serves() const {
    EXPECT_EQ(grain::async(locality(dest), action<&square>{}, 7).get(), 49);
  }
  static std::vector<char> int_args(int x) {
    std::vector<char> b;
    serialize_values(b, x);
    return b;
  }
  std::uint32_t dest = 1;
};

}  // namespace grain::test::dist
