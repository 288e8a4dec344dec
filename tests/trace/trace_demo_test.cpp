// A small, readable trace for the documentation (docs/tracing.md, the ViTE screenshot): a
// "stencil" whose chunk size a compiled policy changes between steps, so the trace shows tasks,
// idle time, counters and decisions together. Disabled by default:
//   GRAIN_TRACE_DEMO_DIR=/tmp/demo grain_trace_tests --gtest_also_run_disabled_tests
//       --gtest_filter='*WriteDemoTrace*'
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "grain/grain.hpp"
#include "trace_util.hpp"

namespace grain::test {
namespace {

void spin_us(int us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

TEST(TraceDemo, DISABLED_WriteDemoTrace) {
  const char* out = std::getenv("GRAIN_TRACE_DEMO_DIR");
  const std::string dir = out ? out : "/tmp/grain-trace-demo";
  grain::runtime rt(
      {"--grain:threads=2", "--grain:trace=" + dir, "--grain:trace-overwrite",
       "--grain:sample-interval=2", "--grain:trace-counters=/threads{locality#0/total}/idle-rate",
       "--grain:trace-counters=/threads{locality#0/total}/count/cumulative"},
      false);
  auto& chunk = grain::knobs().define_int("demo.chunk", 1, 64, 4, "points per task");
  constexpr int points = 64;
  for (int step = 0; step < 8; ++step) {
    const int c = static_cast<int>(chunk.int_value());
    std::vector<grain::future<void>> fs;
    for (int p = 0; p < points; p += c)
      fs.push_back(grain::async(grain::annotate("stencil-chunk", [c] { spin_us(25 * c); })));
    for (auto& f : fs) f.get();
    grain::async(grain::annotate("reduce", [] { spin_us(150); })).get();
    // The "policy": coarser chunks while the overhead share is high, then back.
    if (step == 2)
      chunk.set(16, "tasks too small for their overhead", "coarsen",
                {{"/threads/time/average-overhead", 1900}});
    if (step == 5)
      chunk.set(8, "too few tasks for two workers", "refine", {{"/threads/idle-rate", 0.41}});
  }
  rt.stop();
  std::printf("demo trace in %s/traces.otf2\n", dir.c_str());
}

}  // namespace
}  // namespace grain::test
