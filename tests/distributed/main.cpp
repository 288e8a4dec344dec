// The distributed tests' main: ctest starts it under mpirun with 2, 3 and 4 ranks (and once
// without mpirun). Rank 0 runs the tests; the other ranks serve actions inside the
// grain::runtime constructor and exit when rank 0's runtime ends.
#include <gtest/gtest.h>

#include "grain/grain.hpp"

int main(int argc, char** argv) {
  grain::runtime rt(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  rt.stop();
  return rc;
}
