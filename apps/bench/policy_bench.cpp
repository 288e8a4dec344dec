// Benchmarks of the policy engine (reported in the closing notes, not timed tests).
//
//   policy-bench rule [N]       cost of one invocation of a 20-line rule reading 10 counters
//                               (engine without its thread, a 200-counter snapshot; median of
//                               N = 20000 calls in batches)
//   policy-bench periodic [S]   CPU share of the policy thread with a 10 ms periodic rule in a
//                               running grain runtime (sampler at 10 ms) over S = 5 seconds
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "grain/clock.hpp"
#include "grain/grain.hpp"
#include "grain/policy/engine.hpp"

namespace {

// 20 lines, 10 counter reads, arithmetic, a comparison and a (non-changing) knob decision.
const char* rule_20_lines = R"(
local k = grain.knob("bench.knob")
local base = "/threads{locality#0/pool#default/worker#"
grain.every(10, function()
  local idle = grain.counter("/threads/idle-rate")
  local td = grain.counter("/threads/time/average")
  local to = grain.counter("/threads/time/average-overhead")
  local n = grain.counter("/threads/count/cumulative")
  local q = grain.counter("/threads/queue-length")
  local w0 = grain.counter(base .. "0}/idle-rate")
  local w1 = grain.counter(base .. "1}/idle-rate")
  local st = grain.counter("/threads/count/stolen-to")
  local ph = grain.counter("/threads/count/cumulative-phases")
  local app = grain.counter("/app/iteration-time")
  if not (idle and td and to and n and q and w0 and w1 and st and ph and app) then return end
  local imbalance = math.abs(w0 - w1)
  local ratio = to / math.max(td, 1)
  local want = k:get()
  if idle > 0.9 and q < 1 and imbalance > 0.5 and ratio > 100 then want = want - 1 end
  if n + st + ph + app < 0 then want = want + 1 end
  k:set(want, "bench")
end, "bench-rule")
)";

grain::instrumentation::counter_snapshot make_snapshot() {
  grain::instrumentation::counter_snapshot s;
  s.layout_generation = 1;
  auto add = [&](std::string n, double v) { s.values.push_back({std::move(n), v, true}); };
  const char* names[] = {
      "idle-rate",       "time/average",     "time/average-overhead",   "count/cumulative",
      "queue-length",    "count/stolen-to",  "count/cumulative-phases", "time/overall",
      "time/cumulative", "count/stolen-from"};
  for (const char* n : names) add(std::string("/threads{locality#0/total}/") + n, 0.25);
  for (int w = 0; s.values.size() < 199; ++w)
    for (const char* n : names)
      add("/threads{locality#0/pool#default/worker#" + std::to_string(w) + "}/" + n, 0.1 * (w + 1));
  add("/app/iteration-time", 1.5e6);
  std::sort(s.values.begin(), s.values.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return s;
}

int bench_rule(int n) {
  grain::knobs().define_int("bench.knob", 1, 64, 8, "benchmark knob");
  grain::policy::engine e;
  e.load_string(rule_20_lines, "bench.lua");
  e.feed_sample(make_snapshot());
  e.pump();
  for (int i = 0; i < 1000; ++i) e.run_periodic_now();  // warm up
  std::vector<double> per_call;
  const int batch = 100;
  for (int b = 0; b < n / batch; ++b) {
    const auto t0 = grain::now_ns();
    for (int i = 0; i < batch; ++i) e.run_periodic_now();
    per_call.push_back(static_cast<double>(grain::now_ns() - t0) / batch);
  }
  std::sort(per_call.begin(), per_call.end());
  const auto r = e.rules().at(0);
  std::printf(
      "20-line rule, 10 counter reads, 200-counter snapshot: median %.2f us per call "
      "(p10 %.2f, p90 %.2f; %llu calls, %llu errors)\n",
      per_call[per_call.size() / 2] / 1e3, per_call[per_call.size() / 10] / 1e3,
      per_call[per_call.size() * 9 / 10] / 1e3, static_cast<unsigned long long>(r.calls),
      static_cast<unsigned long long>(r.errors));
  return r.errors == 0 ? 0 : 1;
}

int bench_periodic(double seconds) {
  grain::knobs().define_int("bench.knob", 1, 64, 8, "benchmark knob");
  const char* path = "/tmp/grain_policy_bench_rule.lua";
  if (std::FILE* f = std::fopen(path, "w")) {
    std::fputs(rule_20_lines, f);
    std::fclose(f);
  }
  grain::runtime rt({"--grain:sample-interval=10", std::string("--grain:policy=") + path}, false);
  grain::sample_value("/app/iteration-time", 1.5e6);
  auto* e = grain::policy::current_engine();
  if (!e) {
    std::fprintf(stderr, "no policy engine\n");
    return 1;
  }
  const std::uint64_t cpu0 = e->thread_cpu_ns(), t0 = grain::now_ns();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const std::uint64_t cpu1 = e->thread_cpu_ns(), t1 = grain::now_ns();
  const auto r = e->rules().at(0);
  rt.stop();
  const double share = static_cast<double>(cpu1 - cpu0) / static_cast<double>(t1 - t0);
  std::printf(
      "policy thread, 10 ms periodic 20-line rule + 10 ms samples: %.3f%% of one core "
      "(%.1f ms CPU in %.2f s; %llu rule calls, %llu errors)\n",
      share * 100, static_cast<double>(cpu1 - cpu0) / 1e6, static_cast<double>(t1 - t0) / 1e9,
      static_cast<unsigned long long>(r.calls), static_cast<unsigned long long>(r.errors));
  return 0;
}

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "rule";
  if (mode == "rule") return bench_rule(argc > 2 ? std::atoi(argv[2]) : 20000);
  if (mode == "periodic") return bench_periodic(argc > 2 ? std::atof(argv[2]) : 5.0);
  std::fprintf(stderr, "usage: policy-bench rule [N] | periodic [SECONDS]\n");
  return 2;
}

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    return grain::fatal_error("policy-bench", e);
  }
}
