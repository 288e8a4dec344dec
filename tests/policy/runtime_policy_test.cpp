// Policies in a running runtime: start-up errors, a runaway rule, elastic pools changed by a
// policy without losing tasks, knob changes seen by a running component, command-line knobs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/policy/engine.hpp"
#include "grain/policy/policy.hpp"

namespace {

using namespace std::chrono_literals;

std::string write_policy(const std::string& name, const std::string& text) {
  auto d = std::filesystem::temp_directory_path() /
           ("grain_runtime_policy_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  std::string p = (d / name).string();
  std::ofstream(p) << text;
  return p;
}

std::vector<std::string> args(std::vector<std::string> extra, bool interval = true) {
  std::vector<std::string> a = {"--grain:threads=2"};
  if (interval) a.push_back("--grain:sample-interval=10");
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Busy work on the workers until `until` says stop; returns the number of tasks that ran.
std::uint64_t run_batches(std::atomic<std::uint64_t>& ran, const std::function<bool()>& until,
                          std::chrono::milliseconds timeout) {
  std::uint64_t spawned = 0;
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!until() && std::chrono::steady_clock::now() < end) {
    std::vector<grain::future<void>> fs;
    for (int i = 0; i < 200; ++i) {
      fs.push_back(grain::async([&ran] {
        volatile double x = 0;
        for (int j = 0; j < 20000; ++j) x = x + j * 0.5;  // ~20 us: work, not wake-ups
        ran.fetch_add(1, std::memory_order_relaxed);
      }));
      ++spawned;
    }
    for (auto& f : fs) f.get();
  }
  return spawned;
}

void start_from_command_line(const std::string& policy) {
  std::string a0 = "test", a1 = "--grain:policy=" + policy;
  char* argv[] = {a0.data(), a1.data(), nullptr};
  int argc = 2;
  grain::runtime rt(argc, argv);
}

TEST(RuntimePolicy, SyntaxErrorStopsStartUp) {
  std::string p = write_policy("broken.lua", "grain.every(10, function()\n  if then\nend)\n");
  try {
    grain::runtime rt(args({"--grain:policy=" + p}), false);
    FAIL() << "expected option_error";
  } catch (const grain::option_error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.lua:2:"), std::string::npos) << e.what();
  }
  // The command-line form exits non-zero after printing the message.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(start_from_command_line(p), ::testing::ExitedWithCode(2), "broken.lua:2:");
}

TEST(RuntimePolicy, RunawayRuleIsCutAndTheProgramFinishes) {
  std::string p =
      write_policy("runaway.lua", "grain.every(5, function() while true do end end, 'runaway')\n");
  auto t0 = std::chrono::steady_clock::now();
  {
    grain::runtime rt(args({"--grain:policy=" + p, "--grain:policy-budget=200000"}), false);
    std::atomic<std::uint64_t> ran{0};
    const auto spawned = run_batches(
        ran, [] { return false; }, 200ms);
    EXPECT_EQ(ran.load(), spawned);
    auto* e = grain::policy::current_engine();
    ASSERT_NE(e, nullptr);
    e->pump();
    auto rules = e->rules();
    ASSERT_EQ(rules.size(), 1u);
    EXPECT_TRUE(rules[0].disabled);
    EXPECT_EQ(rules[0].errors, 3u);
    EXPECT_NE(rules[0].last_error.find("runaway.lua:1"), std::string::npos) << rules[0].last_error;
    rt.stop();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

// A policy shrinks the default pool to one worker and grows it back while tasks run: the
// active-worker counter follows and every task completes.
TEST(RuntimePolicy, PoolShrinksToOneAndBackWithoutLosingTasks) {
  grain::knob& done = grain::knobs().define_int("test.rt.pool_done", 0, 1, 0, "x");
  done.set(0, "reset");
  std::string p = write_policy("shrink_grow.lua", R"(
local phase, k = 0, grain.knob("pool.default.workers")
local active = "/threads{locality#0/pool#default/total}/count/active-workers"
grain.on("sample", function()
  local a = grain.counter(active)
  if phase == 0 and a == 2 then
    k:set(1, "shrink"); phase = 1
  elseif phase == 1 and a == 1 then
    phase = 2; saw_one = (saw_one or 0) + 1
  elseif phase == 2 then
    k:set(2, "grow"); phase = 3
  elseif phase == 3 and a == 2 then
    phase = 4; grain.knob("test.rt.pool_done"):set(1, "saw 2 -> 1 -> 2")
  end
end, "shrink-grow")
)");
  grain::runtime rt(args({"--grain:policy=" + p}), false);
  std::atomic<std::uint64_t> ran{0};
  const auto spawned = run_batches(
      ran, [&] { return done.value() == 1; }, 5s);
  rt.stop();
  EXPECT_EQ(done.value(), 1) << "the policy did not see the pool go 2 -> 1 -> 2";
  EXPECT_EQ(ran.load(), spawned);
  EXPECT_GT(spawned, 0u);
  // The decisions: shrink then grow, both by the rule.
  int shrink = 0, grow = 0;
  for (auto& d : grain::knobs().decisions())
    if (d.knob == "pool.default.workers" && d.rule == "shrink-grow") {
      if (d.new_value == 1) ++shrink;
      if (d.new_value == 2 && d.old_value == 1) ++grow;
    }
  EXPECT_EQ(shrink, 1);
  EXPECT_EQ(grow, 1);
}

// throttle.lua shrinks an idle pool and grows it back under load.
TEST(RuntimePolicy, ThrottleShrinksIdlePoolAndGrowsUnderLoad) {
  std::string cfg = write_policy(
      "throttle_cfg.lua", "THROTTLE = { period_ms = 20, patience = 2, high = 0.5, low = 0.2 }\n");
  grain::runtime rt(args({"--grain:policy=" + cfg,
                          "--grain:policy=" GRAIN_SOURCE_DIR "/policies-lua/throttle.lua"}),
                    false);
  grain::knob& w = grain::knobs().at("pool.default.workers");
  // Idle: a trickle of tiny tasks.
  auto end = std::chrono::steady_clock::now() + 3s;
  while (w.value() > 1 && std::chrono::steady_clock::now() < end) {
    grain::async([] {}).get();
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(w.value(), 1) << "throttle did not shrink an idle pool";
  // Busy: both workers' worth of work queued all the time.
  std::atomic<std::uint64_t> ran{0};
  const auto spawned = run_batches(
      ran, [&] { return w.value() == 2; }, 5s);
  EXPECT_EQ(w.value(), 2) << "throttle did not grow the pool under load";
  EXPECT_EQ(ran.load(), spawned);
  rt.stop();
}

// A pool nobody uses (the program runs serial code outside tasks) keeps its workers: they
// sleep, so a smaller pool would free nothing and only start the next parallel phase short.
TEST(RuntimePolicy, ThrottleKeepsAPoolThatRunsNoTask) {
  std::string cfg =
      write_policy("throttle_unused.lua",
                   "THROTTLE = { period_ms = 20, patience = 2, high = 0.5, low = 0.2 }\n");
  grain::runtime rt(args({"--grain:policy=" + cfg,
                          "--grain:policy=" GRAIN_SOURCE_DIR "/policies-lua/throttle.lua"}),
                    false);
  grain::knob& w = grain::knobs().at("pool.default.workers");
  std::this_thread::sleep_for(400ms);  // 20 periods without a task
  EXPECT_EQ(w.value(), 2) << "throttle shrank a pool that ran no task";
  rt.stop();
}

// A running component (a task polling a knob at its decision point) sees a policy's change
// within one sample interval of the snapshot that triggered it.
TEST(RuntimePolicy, ComponentSeesKnobChangeWithinOneSampleInterval) {
  grain::knob& k = grain::knobs().define_double("test.rt.react", 0, 1e12, 0, "snapshot time, s");
  k.set(0, "reset");
  std::string p = write_policy("react.lua", R"(
grain.on("sample", function(s)
  local phase = grain.counter("/app/test-phase")
  if phase and phase >= 1 and grain.knob("test.rt.react"):get() == 0 then
    grain.knob("test.rt.react"):set(s.time, "phase 1 seen")
  end
end, "react")
)");
  const std::uint64_t interval_ns = 20'000'000;
  grain::runtime rt(args({"--grain:policy=" + p, "--grain:sample-interval=20"}, false), false);
  grain::sample_value("/app/test-phase", 0);
  std::this_thread::sleep_for(50ms);
  const std::uint64_t t0 = grain::now_ns();
  grain::sample_value("/app/test-phase", 1);
  std::uint64_t seen = grain::async([&] {
                         const auto deadline = grain::now_ns() + 2'000'000'000ull;
                         while (k.value() == 0 && grain::now_ns() < deadline) {
                         }
                         return grain::now_ns();
                       }).get();
  rt.stop();
  ASSERT_NE(k.value(), 0) << "the policy never changed the knob";
  const auto snapshot_ns = static_cast<std::uint64_t>(k.value() * 1e9);
  EXPECT_LE(seen - snapshot_ns, interval_ns)
      << "seen " << (seen - snapshot_ns) / 1e6 << " ms after the snapshot";
  // From the application's change: at most one interval until the sampler takes it, plus the
  // reaction above.
  EXPECT_LE(seen - t0, 2 * interval_ns) << (seen - t0) / 1e6 << " ms";
}

TEST(RuntimePolicy, CommandLineKnobs) {
  {
    grain::runtime rt(
        args({"--grain:knob=pool.default.workers=1", "--grain:knob=test.rt.later=42"}), false);
    EXPECT_EQ(grain::knobs().at("pool.default.workers").value(), 1);
    EXPECT_EQ(rt.core().active_workers(0), 1u);
    grain::knob& later = grain::knobs().define_int("test.rt.later", 0, 100, 7, "app-defined");
    EXPECT_EQ(later.value(), 42);
    auto d = grain::knobs().decisions().back();
    EXPECT_EQ(d.rule, "cli");
    rt.stop();
  }
  try {
    grain::runtime rt(args({"--grain:knob=pool.default.workers=9"}), false);
    FAIL() << "expected option_error";
  } catch (const grain::option_error& e) {
    EXPECT_NE(std::string(e.what()).find("int [1, 2]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(grain::runtime(args({"--grain:knob=novalue"}), false), grain::option_error);
}

TEST(RuntimePolicy, RegisteredCppPolicyRunsInTheRuntime) {
  grain::knob& k = grain::knobs().define_int("test.rt.cpp", 0, 1000000, 0, "x");
  k.set(0, "reset");
  const int id = grain::policy::register_periodic_policy(
      5ms,
      [](grain::policy::policy_context& c) {
        c.set("test.rt.cpp", c.get("test.rt.cpp") + 1, "tick");
      },
      "ticker");
  {
    grain::runtime rt(args({}), false);
    std::this_thread::sleep_for(100ms);
    rt.stop();
  }
  grain::policy::unregister_policy(id);
  EXPECT_GE(k.value(), 5);
  EXPECT_EQ(grain::knobs().decisions().back().rule, "ticker");
}

}  // namespace
