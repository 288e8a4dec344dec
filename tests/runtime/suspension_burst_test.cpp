// Rounds of bursts of suspended tasks: every task waits on one latch, then the gate opens,
// then the next round. Between rounds the fibers of the finished tasks go back to the free
// lists, and the next round must be able to run on them (issue 11, item 1: a fiber parked in
// the global free list had its stack pages released while its saved frames were still live).
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "common/suspended.hpp"
#include "grain/detail/config.hpp"
#include "runtime_fixture.hpp"

namespace {

void burst(int n, std::atomic<long>& ran) {
  grain::test::with_suspended(
      n, [] {}, [&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
}

struct BurstCase {
  unsigned workers;
  int tasks;
};

class SuspensionBurst : public ::testing::TestWithParam<BurstCase> {};

TEST_P(SuspensionBurst, RoundsOfSuspendedTasksAllRun) {
  const auto [workers, n] = GetParam();
#if GRAIN_TSAN
  // ThreadSanitizer's own state per user thread exhausts its mappings (ENOMEM) beyond a few
  // thousand; the plain and ASan builds run every size.
  if (n > 2000) GTEST_SKIP() << "not under ThreadSanitizer: " << n << " user threads";
#endif
  auto rt = grain::test::start_runtime({"--grain:threads=" + std::to_string(workers)});
  std::atomic<long> ran{0};
  constexpr int rounds = 3;
  for (int r = 0; r < rounds; ++r) burst(n, ran);
  EXPECT_EQ(ran.load(), static_cast<long>(rounds) * n);
}

std::string burst_name(const ::testing::TestParamInfo<BurstCase>& info) {
  return std::to_string(info.param.workers) + "workers_" + std::to_string(info.param.tasks);
}

INSTANTIATE_TEST_SUITE_P(Small, SuspensionBurst,
                         ::testing::Values(BurstCase{1, 10}, BurstCase{2, 10}, BurstCase{1, 400},
                                           BurstCase{2, 400}, BurstCase{1, 1000},
                                           BurstCase{2, 1000}, BurstCase{1, 10000},
                                           BurstCase{2, 10000}),
                         burst_name);

// The largest burst of the issue; beyond the guard-page budget of the default vm.max_map_count.
INSTANTIATE_TEST_SUITE_P(Huge, SuspensionBurst, ::testing::Values(BurstCase{2, 100000}),
                         burst_name);

}  // namespace
