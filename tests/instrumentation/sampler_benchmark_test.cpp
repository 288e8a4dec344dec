// Benchmark, not a timed test (disabled by default): what sampling every counter each 1 ms
// costs. Run with
//   build/bin/grain_instrumentation_tests --gtest_also_run_disabled_tests
//     --gtest_filter='SamplerBenchmark.*'
// (one command line).
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "common/spin.hpp"
#include "grain/clock.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"

namespace gi = grain::instrumentation;
using namespace std::chrono_literals;

namespace {

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

using grain::test::spin_ns;

void sampler_load(unsigned interval_ms, bool busy) {
  grain::runtime rt({"--grain:sample-interval=" + std::to_string(interval_ms)}, false);
  std::vector<grain::future<void>> fs;
  if (busy)
    for (int i = 0; i < 40000; ++i) fs.push_back(grain::async([] { spin_ns(100'000); }));
  std::this_thread::sleep_for(100ms);
  grain::counters::reset();
  std::this_thread::sleep_for(2s);
  const double n = gi::registry().value("/sampler/count/samples")->value;
  const double cpu = gi::registry().value("/sampler/time/cpu")->value;
  const double load = gi::registry().value("/sampler/cpu-load")->value;
  const double ir = gi::registry().value("/threads/idle-rate")->value;
  std::printf(
      "interval %u ms, workers %s (idle-rate %.3f): %.0f samples in 2 s, sampler thread "
      "%.1f us CPU per sample, %.3f %% of one core\n",
      interval_ms, busy ? "busy" : "idle", ir, n, cpu / n / 1e3, load * 100);
  gi::registry().reset();
  if (busy) {
    // Do not wait for 4 s of remaining work: the futures are dropped; stop() drains.
    fs.clear();
  }
}

// The floor under any sampler thread on this machine: a thread that only wakes every
// interval (absolute clock_nanosleep) and does nothing. On a VM a timer wake-up costs the
// thread tens of microseconds of CPU, which no sampler can go below.
void bare_wake_floor(unsigned interval_ms) {
  double cpu = 0;
  const int n = static_cast<int>(2000 / interval_ms);
  std::thread t([&] {
    timespec next{};
    clock_gettime(CLOCK_MONOTONIC, &next);
    const double c0 = thread_cpu_ns();
    for (int i = 0; i < n; ++i) {
      next.tv_nsec += static_cast<long>(interval_ms) * 1'000'000;
      if (next.tv_nsec >= 1'000'000'000) {
        next.tv_nsec -= 1'000'000'000;
        ++next.tv_sec;
      }
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
    }
    cpu = thread_cpu_ns() - c0;
  });
  t.join();
  std::printf(
      "floor: a bare thread waking every %u ms costs %.1f us CPU per wake-up, %.3f %% of one "
      "core\n",
      interval_ms, cpu / n / 1e3, cpu / (n * interval_ms * 1e6) * 100);
}

}  // namespace

TEST(SamplerBenchmark, DISABLED_CostOfSamplingEveryCounter) {
  {
    grain::runtime rt({}, false);
    gi::counter_snapshot s;
    gi::registry().sample(s);
    const int n = 100000;
    const double c0 = thread_cpu_ns();
    for (int i = 0; i < n; ++i) gi::registry().sample(s);
    const double c1 = thread_cpu_ns();
    std::printf(
        "%u workers, %zu counters: one snapshot of every counter costs %.0f ns CPU "
        "(%.3f %% of a core at 1 ms)\n",
        rt.num_workers(), s.values.size(), (c1 - c0) / n, (c1 - c0) / n / 1e6 * 100);
  }
  bare_wake_floor(1);
  bare_wake_floor(10);
  sampler_load(1, false);
  sampler_load(1, true);
  sampler_load(10, false);
  sampler_load(10, true);
}
