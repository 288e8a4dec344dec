// The scheduler.steal knob and the steal orders behind it (runtime/src/steal_order.hpp): each
// value is a mode, "off" stops stealing, "near-only" stays inside a NUMA domain. The machine is
// a synthetic one (HWLOC_SYNTHETIC) with two NUMA domains of one PU each, so that the two
// workers are never near each other whatever machine runs the test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/optional_deps.hpp"
#include "common/scoped_env.hpp"
#include "common/spin.hpp"
#include "grain/async.hpp"
#include "grain/knob.hpp"
#include "runtime_fixture.hpp"

namespace {

using grain::test::start_runtime;

using grain::test::scoped_env;

std::uint64_t steals(grain::runtime_core& rt) {
  std::uint64_t n = 0;
  for (unsigned w = 0; w < rt.num_workers(); ++w) n += rt.stats(w).stolen_to.get();
  return n;
}

// A task fills its own deque with children that each take 200 us and waits for them: an idle
// worker that may steal from it gets some. Up to `rounds` rounds, until something was stolen.
std::uint64_t steals_in_bursts(grain::runtime_core& rt, int rounds) {
  for (int r = 0; r < rounds && steals(rt) == 0; ++r) {
    grain::async([] {
      std::vector<grain::future<void>> kids;
      for (int i = 0; i < 64; ++i)
        kids.push_back(grain::async([] { grain::test::spin_ns(200'000); }));
      for (auto& k : kids) k.get();
    }).get();
  }
  return steals(rt);
}

std::unique_ptr<grain::runtime_core> two_numa_domains() {
  scoped_env env("HWLOC_SYNTHETIC", "pack:2 numa:1 core:1 pu:1");
  return start_runtime({"--grain:threads=2", "--grain:bind=compact"});
}

}  // namespace

TEST(StealOrder, TheKnobTakesEveryModeByItsNumber) {
  auto rt = start_runtime();
  const grain::knob& k = grain::knobs().at("scheduler.steal");
  EXPECT_EQ(k.min(), 0);
  EXPECT_EQ(k.max(), 2);
  EXPECT_EQ(k.value(), 1) << "near-first is the default";
  for (const char* name : {"0 off", "1 near-first", "2 near-only"})
    EXPECT_NE(k.description().find(name), std::string::npos) << k.description();
}

TEST(StealOrder, OffStealsNothing) {
  GRAIN_SKIP_WITHOUT_HWLOC("a machine of two NUMA domains (HWLOC_SYNTHETIC)");
  auto rt = two_numa_domains();
  grain::knobs().at("scheduler.steal").set(0, "test");
  steals_in_bursts(*rt, 5);
  EXPECT_EQ(steals(*rt), 0u);
  grain::knobs().at("scheduler.steal").set(1, "test");
}

TEST(StealOrder, NearFirstStealsAcrossDomains) {
  GRAIN_SKIP_WITHOUT_HWLOC("a machine of two NUMA domains (HWLOC_SYNTHETIC)");
  auto rt = two_numa_domains();
  grain::knobs().at("scheduler.steal").set(1, "test");
  EXPECT_GT(steals_in_bursts(*rt, 50), 0u) << "near-first falls back to far workers";
}

TEST(StealOrder, NearOnlyStaysInItsDomain) {
  GRAIN_SKIP_WITHOUT_HWLOC("a machine of two NUMA domains (HWLOC_SYNTHETIC)");
  auto rt = two_numa_domains();
  grain::knobs().at("scheduler.steal").set(2, "test");
  steals_in_bursts(*rt, 5);
  EXPECT_EQ(steals(*rt), 0u) << "each worker is alone in its NUMA domain";
  // The same runtime steals again once the knob moves back: the mode is read per steal.
  grain::knobs().at("scheduler.steal").set(1, "test");
  EXPECT_GT(steals_in_bursts(*rt, 50), 0u);
}
