// The end of the program with parcels still in flight: rank 0's tests return at once, while
// a chain of posts hops from locality to locality. ctest checks that the chain's last hop ran
// (its line in the output): the end across ranks waits for it.
#include <gtest/gtest.h>

#include "actions.hpp"

namespace grain::test::dist {
namespace {

TEST(Shutdown, PostsInFlightRunBeforeTheEnd) {
  grain::post(locality(get_num_localities() - 1), action<&slow_post>{}, 30, 6);
}

}  // namespace
}  // namespace grain::test::dist
