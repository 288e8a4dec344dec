// The /parcels counters (docs/counters.md) against what a test sent: parcels, messages and
// bytes each way, and the mean round trip of calls of known duration (timed on one call in 16). The
// sent counts are kept per thread and the received ones by the thread handing messages over
// (distributed/src/sharded_counts.hpp): these check that nothing is lost on the way.
#include <gtest/gtest.h>

#include <string>

#include "actions.hpp"
#include "grain/instrumentation/counters.hpp"
#include "testing.hpp"

namespace grain::test::dist {
namespace {

namespace t = grain::distributed::testing;

double parcel_counter(const std::string& what) {
  const std::string name =
      "/parcels{locality#" + std::to_string(find_here().rank()) + "/total}/" + what;
  auto v = instrumentation::registry().value(name);
  return v && v->available ? v->value : -1;
}

TEST(ParcelCounters, CountWhatCallsSendAndReceiveAndTheirRoundTrip) {
  if (get_num_localities() < 2) GTEST_SKIP() << "needs two localities (mpirun -np 2)";
  const std::uint32_t dest = get_num_localities() - 1;
  ASSERT_GE(parcel_counter("count/sent"), 0) << "the /parcels counters are registered under mpirun";
  instrumentation::registry().reset();  // every counter from here
  // From several threads at once: each thread's sends count in its own shard.
  // 48 calls from two workers (and the main thread, should a task run inline): one thread makes
  // 16 at least, and of any 16 calls of a thread one is timed (the latency's sample).
  constexpr int calls = 48;
  std::vector<future<int>> naps;
  for (int i = 0; i < calls; ++i)
    naps.push_back(
        grain::async([dest] { return grain::async(locality(dest), action<&nap>{}, 5).get(); }));
  for (auto& f : naps) EXPECT_EQ(f.get(), 5);
  // The counters report relative to the reset: the monotonic ones count from zero again.
  EXPECT_EQ(parcel_counter("count/sent"), calls);
  EXPECT_EQ(parcel_counter("count/received"), calls) << "the answers";
  EXPECT_EQ(parcel_counter("count/messages-sent"), calls);
  EXPECT_EQ(parcel_counter("count/messages-received"), calls);
  const double bytes = parcel_counter("data/sent");
  if (t::compact_parcels())
    EXPECT_EQ(bytes, calls * sizeof(int)) << "compact: the argument alone";
  else
    EXPECT_GT(bytes, calls * sizeof(int));
  const double latency = parcel_counter("time/average-latency");
  EXPECT_GE(latency, 5e6) << "each call sleeps 5 ms on the other side";
  EXPECT_LT(latency, 5e6 * calls) << "not a sum";
}

}  // namespace
}  // namespace grain::test::dist
