// A rank that dies while rank 0 waits on it: the job must end within seconds, naming the
// rank, never hang (ctest Distributed.DeadRankEndsTheJob runs only this, under mpirun -np 3,
// and checks the exit status, the time and mpirun's message).
#include <gtest/gtest.h>

#include "actions.hpp"

namespace grain::test::dist {
namespace {

TEST(DeadRank, RankTwoIsKilledWhileACallWaitsOnIt) {
  if (get_num_localities() < 3) GTEST_SKIP() << "needs mpirun -np 3";
  auto f = grain::async(locality(2), action<&die_here>{}, 100);
  auto g = grain::async(locality(1), action<&square>{}, 3);
  EXPECT_EQ(g.get(), 9);
  f.get();  // never returns: rank 2 is gone, and mpirun ends the job
  ADD_FAILURE() << "the call to the killed rank returned";
}

}  // namespace
}  // namespace grain::test::dist
