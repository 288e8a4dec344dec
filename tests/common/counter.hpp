#pragma once
// A counter's current value from the registry; a missing or unavailable counter fails the test
// (and reads as NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "grain/instrumentation/counters.hpp"

namespace grain::test {

inline double counter(const std::string& name) {
  auto v = instrumentation::registry().value(name);
  EXPECT_TRUE(v.has_value()) << name;
  if (!v) return NAN;
  EXPECT_TRUE(v->available) << name;
  return v->value;
}

}  // namespace grain::test
