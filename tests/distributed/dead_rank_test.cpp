// A rank that dies while rank 0 waits on it: the call fails with an error naming it, then the
// job ends within seconds, never hangs (ctest Distributed.Check.dead-rank runs only this, under
// mpirun -np 3, and checks the errors, the exit status, the time and the messages).
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>

#include "actions.hpp"

namespace grain::test::dist {
namespace {

TEST(DeadRank, RankTwoIsKilledWhileACallWaitsOnIt) {
  if (get_num_localities() < 3) GTEST_SKIP() << "needs mpirun -np 3";
  // An all_reduce that needs rank 2 too: rank 0's and rank 1's shares wait for it.
  collective_args gen;
  gen.generation = 900;
  auto mine = all_reduce(1L, std::plus<>{}, gen);
  auto theirs = grain::async(locality(1), action<&contribute_one>{}, std::int64_t(900));
  auto f = grain::async(locality(2), action<&die_here>{}, 100);
  auto g = grain::async(locality(1), action<&square>{}, 3);
  EXPECT_EQ(g.get(), 9);
  // The peer watch sees rank 2's process gone and fails the call before mpirun ends the job.
  try {
    f.get();
    ADD_FAILURE() << "the call to the killed rank returned a value";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    std::printf("dead rank: the waiting call failed: %s\n", what.c_str());
    std::fflush(stdout);
    EXPECT_NE(what.find("locality#2"), std::string::npos) << what;
    EXPECT_NE(what.find("died"), std::string::npos) << what;
  }
  // The collective cannot complete without it: both shares fail, naming it.
  for (auto* c : {&mine, &theirs}) {
    try {
      c->get();
      ADD_FAILURE() << "an all_reduce without rank 2 completed";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("locality#2"), std::string::npos) << e.what();
    }
  }
  std::printf("dead rank: the all_reduce waiting on it failed\n");
  std::fflush(stdout);
  // A later call to it fails at once, with the same reason.
  EXPECT_THROW(grain::async(locality(2), action<&square>{}, 4).get(), std::exception);
  std::printf("dead rank: a later call failed too\n");
  std::fflush(stdout);
}

}  // namespace
}  // namespace grain::test::dist
