// The /loops counters read the runtime's loop statistics: calls, iterations, chunks, the chunk
// size of the last loop and the average chunk size.
#include <gtest/gtest.h>

#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"

namespace gi = grain::instrumentation;
namespace ex = grain::execution;

namespace {

double value(const char* name) {
  auto v = gi::registry().value(name);
  EXPECT_TRUE(v.has_value()) << name;
  return v ? v->value : -1;
}

}  // namespace

TEST(LoopCounters, CountCallsIterationsChunksAndChunkSize) {
  grain::runtime rt({"--grain:threads=2"}, false);
  ASSERT_FALSE(gi::registry().list("/loops{*}/*").empty());
  gi::registry().reset();
  EXPECT_EQ(value("/loops/count/calls"), 0);
  EXPECT_FALSE(gi::registry().value("/loops/average-chunk-size")->available);  // no chunk yet

  grain::for_loop(ex::par.with(ex::dynamic_chunk_size(25)), 0, 1000, [](int) {});
  grain::for_loop(ex::par.with(ex::static_chunk_size(10)), 0, 500, [](int) {});
  grain::for_loop(ex::seq, 0, 500, [](int) {});  // not counted
  EXPECT_EQ(value("/loops/count/calls"), 2);
  EXPECT_EQ(value("/loops/count/iterations"), 1500);
  EXPECT_EQ(value("/loops/count/chunks"), 40 + 50);
  EXPECT_EQ(value("/loops{locality#0/total}/chunk-size"), 10);
  EXPECT_DOUBLE_EQ(value("/loops/average-chunk-size"), 1500.0 / 90.0);

  gi::registry().reset();
  EXPECT_EQ(value("/loops/count/calls"), 0);
  EXPECT_EQ(value("/loops/chunk-size"), 10);  // a gauge keeps the last loop's size
}
