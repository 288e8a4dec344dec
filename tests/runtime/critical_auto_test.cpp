// --grain:critical=auto (runtime/src/critical_auto.cpp) on synthetic dataflow graphs whose
// critical path is known: the kind on it is found and its tasks then run on the critical pool,
// the others on default; the longest path wins over the longest tasks; bad options are refused.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <vector>

#include "grain/async.hpp"
#include "grain/dataflow.hpp"
#include "grain/detail/critical_tracking.hpp"
#include "grain/options.hpp"
#include "grain/this_task.hpp"
#include "runtime_fixture.hpp"

namespace {

using grain::test::start_runtime;
using namespace std::chrono_literals;

void spin_for(std::chrono::microseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

struct placement_count {
  std::atomic<int> on_critical{0};
  std::atomic<int> on_default{0};
};

struct step {
  grain::runtime_core* rt;
  placement_count* where;
  std::chrono::microseconds work;
  template <class... F>
  void operator()(F&&... in) const {
    (in.get(), ...);
    spin_for(work);
    const auto w = static_cast<unsigned>(grain::this_task::worker_index());
    const auto p = static_cast<int>(rt->pool_of(w));
    (p == rt->pool_index("critical") ? where->on_critical : where->on_default).fetch_add(1);
  }
};

// A chain of `links` tasks of kind "chain" (300 µs each); every link also releases 3 "side"
// tasks (200 µs) that nothing waits for. The critical path is the chain.
void chain_with_sides(grain::runtime_core* rt, placement_count& chain, placement_count& side,
                      int links) {
  grain::shared_future<void> prev = grain::make_ready_future();
  std::vector<grain::future<void>> sides;
  for (int i = 0; i < links; ++i) {
    prev = grain::dataflow(grain::annotate("chain", step{rt, &chain, 300us}), prev).share();
    for (int k = 0; k < 3; ++k)
      sides.push_back(grain::dataflow(grain::annotate("side", step{rt, &side, 200us}), prev));
  }
  prev.get();
  for (auto& f : sides) f.get();
}

TEST(CriticalAuto, FindsTheKindOnAKnownCriticalPathAndRoutesIt) {
  auto rt = start_runtime({"--grain:threads=2", "--grain:pools=critical:1", "--grain:critical=auto",
                           "--grain:critical-window=5"});
  placement_count chain1, side1;
  chain_with_sides(rt.get(), chain1, side1, 60);
  EXPECT_GE(grain::detail::critical_windows(), 2u);
  EXPECT_EQ(grain::detail::critical_kinds(), "chain");
  // Found: from now on every chain task runs on the critical pool, every side task on default.
  placement_count chain2, side2;
  chain_with_sides(rt.get(), chain2, side2, 30);
  EXPECT_EQ(chain2.on_critical.load(), 30);
  EXPECT_EQ(chain2.on_default.load(), 0);
  EXPECT_EQ(side2.on_critical.load(), 0);
  EXPECT_EQ(side2.on_default.load(), 90);
  EXPECT_EQ(grain::detail::critical_kinds(), "chain");
}

TEST(CriticalAuto, TheLongestPathWinsOverTheLongestTasks) {
  auto rt = start_runtime({"--grain:threads=2", "--grain:pools=critical:1", "--grain:critical=auto",
                           "--grain:critical-window=5"});
  placement_count longs, steps;
  auto ready = grain::make_ready_future().share();
  std::vector<grain::future<void>> independent;
  // Six "long" tasks of 3 ms that depend on nothing but a ready future, queued first...
  for (int i = 0; i < 6; ++i)
    independent.push_back(
        grain::dataflow(grain::annotate("long", step{rt.get(), &longs, 3000us}), ready));
  // ...then a chain of sixty 500 µs "step" tasks: 30 ms, ten times a long task.
  grain::shared_future<void> prev = ready;
  for (int i = 0; i < 60; ++i)
    prev = grain::dataflow(grain::annotate("step", step{rt.get(), &steps, 500us}), prev).share();
  prev.get();
  for (auto& f : independent) f.get();
  EXPECT_EQ(grain::detail::critical_kinds(), "step");
}

TEST(CriticalAuto, BadOptionsAreRefused) {
  EXPECT_THROW(start_runtime({"--grain:threads=2", "--grain:critical=auto"}), grain::option_error)
      << "no pool named critical";
  EXPECT_THROW(start_runtime(
                   {"--grain:threads=2", "--grain:pools=critical:1", "--grain:critical=sometimes"}),
               grain::option_error);
  EXPECT_THROW(start_runtime({"--grain:threads=2", "--grain:pools=critical:1",
                              "--grain:critical=auto", "--grain:critical-window=0"}),
               grain::option_error);
  // Off, the default: nothing is tracked and tasks without a pool stay in their caller's pool.
  auto rt = start_runtime({"--grain:threads=2", "--grain:pools=critical:1"});
  EXPECT_FALSE(grain::detail::critical_tracking_on());
}

}  // namespace
