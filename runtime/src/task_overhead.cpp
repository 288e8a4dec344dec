// t_o calibration: rounds of empty tasks on a private one-worker scheduler. One worker, because
// t_o is the cost the scheduler adds to one task on one core (spawn, queue, pop, run, complete,
// join); what parallelism adds on top (steals, wake-ups) depends on the program, and the
// inline.lambda / loop.lambda ratios absorb it (docs/inlining.md).
#include "task_overhead.hpp"

#include <algorithm>
#include <atomic>
#include <vector>

#include "grain/async.hpp"
#include "grain/clock.hpp"
#include "grain/detail/task_overhead.hpp"
#include "hooks_internal.hpp"
#include "scheduler.hpp"

namespace grain::detail {
namespace {

std::atomic<double> g_task_overhead_ns{0};

constexpr int calibration_tasks = 256;  // per round: enough to amortise the two clock reads
constexpr int calibration_rounds = 9;   // the first warms the pools and is dropped

// Runs on the calibration worker. The joins go in spawn order, so the first join suspends the
// driver and every task runs from the worker's queue, as a task that is not inlined does.
double run_rounds() {
  std::vector<future<void>> futures(calibration_tasks);
  std::vector<double> per_task;
  for (int r = 0; r < calibration_rounds; ++r) {
    const std::uint64_t t0 = now_ns();
    for (auto& f : futures) f = grain::async(launch::async, [] {});
    for (auto& f : futures) f.get();
    const std::uint64_t t1 = now_ns();
    if (r > 0) per_task.push_back(static_cast<double>(t1 - t0) / calibration_tasks);
  }
  const auto mid = per_task.begin() + static_cast<std::ptrdiff_t>(per_task.size() / 2);
  std::nth_element(per_task.begin(), mid, per_task.end());
  return per_task[per_task.size() / 2];
}

// Restores the hook table however the calibration ends.
struct hooks_cleared {
  runtime_hooks saved = load_hooks();
  hooks_cleared() { store_hooks(runtime_hooks{}); }
  ~hooks_cleared() { store_hooks(saved); }
  hooks_cleared(const hooks_cleared&) = delete;
  hooks_cleared& operator=(const hooks_cleared&) = delete;
};

}  // namespace

double task_overhead_ns() noexcept {
  return g_task_overhead_ns.load(std::memory_order_relaxed);
}

void set_task_overhead_ns(double ns) noexcept {
  g_task_overhead_ns.store(ns, std::memory_order_relaxed);
}

double measure_task_overhead_ns(const topology& topo, std::size_t stack_size) {
  scheduler_config cfg;
  cfg.pools = {{"default", 1}};
  cfg.bind = false;  // the OS places it; binding would pin it where the real worker 0 goes
  cfg.stack_size = stack_size;
  hooks_cleared no_hooks;
  scheduler s(cfg, topo);
  s.start();
  double ns = 0;
  try {
    ns = grain::async(launch::async, run_rounds).get();
  } catch (...) {
    s.wait_quiescent();
    s.stop();
    throw;
  }
  s.wait_quiescent();
  s.stop();
  return std::max(ns, 1.0);  // a ratio's denominator: never 0, even on a coarse clock
}

}  // namespace grain::detail
