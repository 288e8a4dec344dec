// Cost of the trace hooks, measured without the runtime: one thread calls phase_begin/phase_end
// through the hook table as worker 0, like a worker running inline tasks (nested three deep),
// with timestamps prepared in advance so that only the hooks are timed (no clock reads): the
// traced loop minus the same loop without hooks, per task (one begin and one end). The session
// records one worker, so on this 2-CPU machine its converter runs beside it on the other core
// (convert_pacing.hpp): on a loaded machine the figure includes competing with it.
// Disabled by default (a figure, not a check):
//   grain_trace_tests --gtest_also_run_disabled_tests --gtest_filter='*HookCost*'
#include <gtest/gtest.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "grain/clock.hpp"
#include "grain/ext/hooks.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/trace.hpp"
#include "trace_util.hpp"

namespace grain::test {
namespace {

double run_tasks(unsigned n, std::uint64_t t0) {
  auto& h = grain::hooks();
  std::uint64_t ts = t0;
  const auto start = std::chrono::steady_clock::now();
  for (unsigned i = 0; i < n; i += 3) {
    const std::uint64_t g = (1ull << 40) | i;
    task_info a{g + 1, g, "fib"}, b{g + 2, g + 1, "fib"}, c{g + 3, g + 2, "fib"};
    if (!h.phase_begin || !h.phase_end) {
      ts += 240;
      continue;
    }
    h.phase_begin(0, a, ts += 40);
    h.phase_begin(0, b, ts += 40);
    h.phase_begin(0, c, ts += 40);
    h.phase_end(0, c, true, ts += 40);
    h.phase_end(0, b, true, ts += 40);
    h.phase_end(0, a, true, ts += 40);
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

TEST(TraceBench, DISABLED_HookCost) {
  constexpr unsigned n = 3'000'000;
  temp_path dir("bench");
  instrumentation::trace_config cfg;
  cfg.dir = dir.str();
  cfg.workers = 1;
  cfg.counters = false;
  cfg.decisions = false;
  cfg.overwrite = true;
  const double none = run_tasks(n, grain::now_ns());  // the loop alone
  instrumentation::trace_session s(cfg);
  s.start();
  const double traced = run_tasks(n, grain::now_ns());
  auto st = s.stop();
  // The clock's cost in this thread's CPU time, which a loaded machine's time slicing does not
  // inflate as it does wall time: now_ns() (one rdtsc and its conversion), then rdtsc alone (0
  // where there is none).
  std::uint64_t clock_sum = 0;
  const std::uint64_t c0 = grain::thread_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  for (unsigned i = 0; i < 1'000'000; ++i) clock_sum += grain::now_ns();
  const std::uint64_t c1 = grain::thread_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
#if defined(__x86_64__)
  for (unsigned i = 0; i < 1'000'000; ++i) clock_sum += __rdtsc();
#endif
  const std::uint64_t c2 = grain::thread_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  const double clock_ns = static_cast<double>(c1 - c0) / 1e6;
  const double rdtsc_ns = static_cast<double>(c2 - c1) / 1e6;
  std::printf(
      "hooks: %.1f ns per task (Enter+Leave with GUID and Parent GUID; loop alone %.1f); %.2f "
      "bytes per event in the worker's buffer, %.2f on disk (%llu bytes, %llu events); now_ns() "
      "costs %.1f ns of CPU, rdtsc alone %.1f (%llu)\n",
      (traced - none) / n, none / n,
      static_cast<double>(st.buffer_bytes) / static_cast<double>(st.worker_events),
      static_cast<double>(st.bytes) / static_cast<double>(st.worker_events),
      static_cast<unsigned long long>(st.bytes), static_cast<unsigned long long>(st.worker_events),
      clock_ns, rdtsc_ns, static_cast<unsigned long long>(clock_sum & 1));
  EXPECT_EQ(st.task_enters, n);
}

// The middle of the runs (0 without any).
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// The process's CPU time (all threads) in seconds: user and system.
struct cpu_time {
  double user = 0, sys = 0;
  static cpu_time now() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto s = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
    };
    return {s(ru.ru_utime), s(ru.ru_stime)};
  }
  cpu_time operator-(const cpu_time& o) const { return {user - o.user, sys - o.sys}; }
};

// Hooks that record nothing: with them installed the runtime reads the clock at every phase
// begin and end and calls them, which is what any per-task trace pays before it records
// anything. Each keeps the last stamp of its worker (a store, as a tool would make).
std::uint64_t g_last_stamp[64 * 8];
void stamp_begin(unsigned w, const task_info&, std::uint64_t ts) {
  g_last_stamp[(w & 63) * 8] = ts;
}
void stamp_end(unsigned w, const task_info&, bool, std::uint64_t ts) {
  g_last_stamp[(w & 63) * 8] = ts;
}
hook_chain g_stamp_only{runtime_hooks{.phase_begin = &stamp_begin, .phase_end = &stamp_end}};

// fib(27) with 2 workers (the tracing goal's figure: docs/tracing.md) three ways, in interleaved
// runs: untraced; with hooks that record nothing (the runtime's two clock reads per task and the
// two calls: the floor of any per-task trace that stamps both ends); traced (OTF2). Medians of
// the runs: the cost per task beyond untraced, for the hooks alone and for the trace, so that
// the trace's own recording is their difference. The cost is given twice: wall time per task
// (with both workers busy, half a worker's cost) and CPU time per task (every thread's, the
// converter and the kernel's page zeroing included), which a busy neighbour disturbs less.
// Then the bytes per task event in the workers' buffers and on disk.
// GRAIN_BENCH_N / GRAIN_BENCH_RUNS change the size.
TEST(TraceBench, DISABLED_Fib) {
  const int n = std::getenv("GRAIN_BENCH_N") ? std::atoi(std::getenv("GRAIN_BENCH_N")) : 27;
  const int runs = std::getenv("GRAIN_BENCH_RUNS") ? std::atoi(std::getenv("GRAIN_BENCH_RUNS")) : 7;
  enum mode { off, hooks_only, traced, modes };
  temp_path dir("fib-bench");
  std::vector<double> wall[modes], cpu[modes], sys[modes];
  std::uint64_t tasks = 0, bytes = 0, events = 0, buffer_bytes = 0, buffer_events = 0;
  double stop_s = 0;
  for (int r = 0; r < runs; ++r)
    for (int m = off; m < modes; ++m) {
      std::vector<std::string> args{"--grain:threads=2", "--grain:sample-interval=0"};
      if (m == traced)
        args.insert(args.end(), {"--grain:trace=" + dir.str(), "--grain:trace-overwrite"});
      grain::runtime rt(args, false);
      if (m == hooks_only) g_stamp_only.install();
      grain::async([] { return fib(10); }).get();  // warm up
      std::uint64_t t0 = 0;
      for (unsigned w = 0; w < rt.num_workers(); ++w) t0 += rt.core().stats(w).phases.get();
      const cpu_time cpu0 = cpu_time::now();
      const auto a = std::chrono::steady_clock::now();
      EXPECT_GT(grain::async([n] { return fib(n); }).get(), 0);
      wall[m].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
      const cpu_time c = cpu_time::now() - cpu0;
      cpu[m].push_back(c.user + c.sys);
      sys[m].push_back(c.sys);
      std::uint64_t t1 = 0;
      for (unsigned w = 0; w < rt.num_workers(); ++w) t1 += rt.core().stats(w).phases.get();
      tasks = t1 - t0;
      if (m == hooks_only) {
        EXPECT_TRUE(g_stamp_only.uninstall());
      }
      if (m != traced) continue;
      const auto b = std::chrono::steady_clock::now();
      rt.stop();
      stop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - b).count();
      const auto st = instrumentation::last_trace_stats();
      buffer_bytes = st ? st->buffer_bytes : 0;
      buffer_events = st ? st->worker_events : 0;
      auto t = instrumentation::read_otf2((dir / "traces.otf2").string());
      bytes = 0;
      events = 0;
      for (auto& [id, l] : t.locations)
        if (l.type == "CPU_THREAD" && l.name.rfind("worker", 0) == 0) {
          events += l.events.size();
          bytes += fs::file_size(dir / "traces" / (std::to_string(id) + ".evt"));
        }
    }
  const double per_task = 1e9 / static_cast<double>(tasks);
  auto added = [&](std::vector<double>* v, int m) {
    return (median(v[m]) - median(v[off])) * per_task;
  };
  std::printf(
      "fib(%d), 2 workers, %llu task phases, medians of %d: untraced %.1f ms (CPU %.1f); hooks "
      "that record nothing %.1f ms (CPU %.1f): %.1f ns per task (%.1f of CPU); traced %.1f ms "
      "(CPU %.1f, system %.1f against %.1f): %.1f ns per task (%.1f of CPU), of which the "
      "recording %.1f (%.1f of CPU); stop (converting the rest, definitions) %.1f ms; %.2f bytes "
      "per event in the workers' buffers (%llu bytes, %llu events); %.2f bytes per event on disk "
      "(%llu bytes, %llu events on the worker locations)\n",
      n, static_cast<unsigned long long>(tasks), runs, median(wall[off]) * 1e3,
      median(cpu[off]) * 1e3, median(wall[hooks_only]) * 1e3, median(cpu[hooks_only]) * 1e3,
      added(wall, hooks_only), added(cpu, hooks_only), median(wall[traced]) * 1e3,
      median(cpu[traced]) * 1e3, median(sys[traced]) * 1e3, median(sys[off]) * 1e3,
      added(wall, traced), added(cpu, traced), added(wall, traced) - added(wall, hooks_only),
      added(cpu, traced) - added(cpu, hooks_only), stop_s * 1e3,
      static_cast<double>(buffer_bytes) / static_cast<double>(buffer_events),
      static_cast<unsigned long long>(buffer_bytes), static_cast<unsigned long long>(buffer_events),
      static_cast<double>(bytes) / static_cast<double>(events),
      static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(events));
}

// The formats side by side on fib(28) with 2 workers (docs/tracing.md, "Formats compared"):
// untraced, OTF2, Perfetto protobuf, Chrome JSON and gzip-compressed Chrome JSON, in interleaved
// rounds so that the machine's load falls on all alike. Per format the median of the runs: the
// cost per task phase while the program runs (traced minus untraced), the stop (converting what
// is left, closing the file) per task phase, and the bytes on disk per worker event (Enter or
// Leave of a task or idle period; OTF2: the event files, the others: the whole file), as
// trace_stats reports them.
// GRAIN_BENCH_N / GRAIN_BENCH_RUNS change the size.
TEST(TraceBench, DISABLED_Formats) {
  const int n = std::getenv("GRAIN_BENCH_N") ? std::atoi(std::getenv("GRAIN_BENCH_N")) : 28;
  const int runs = std::getenv("GRAIN_BENCH_RUNS") ? std::atoi(std::getenv("GRAIN_BENCH_RUNS")) : 7;
  const std::vector<std::string> formats{"", "otf2", "perfetto", "chrome", "chrome.gz"};
  struct figures {
    std::vector<double> run_s, stop_s, bytes_per_event;
  };
  std::vector<figures> fig(formats.size());
  std::uint64_t tasks = 0;
  temp_path dir("formats-bench");
  const instrumentation::trace_format kinds[] = {
      instrumentation::trace_format::otf2, instrumentation::trace_format::otf2,
      instrumentation::trace_format::perfetto, instrumentation::trace_format::chrome,
      instrumentation::trace_format::chrome_gz};
  for (int r = 0; r < runs; ++r)
    for (std::size_t f = 0; f < formats.size(); ++f) {
      grain::runtime rt({"--grain:threads=2", "--grain:sample-interval=0"}, false);
      grain::async([] { return fib(10); }).get();  // warm up
      instrumentation::trace_config cfg;
      cfg.dir = dir.str();
      cfg.overwrite = true;
      cfg.format = kinds[f];
      cfg.workers = rt.num_workers();
      cfg.counters = false;
      cfg.decisions = false;
      std::optional<instrumentation::trace_session> session;
      if (!formats[f].empty()) {
        session.emplace(cfg);
        session->start();
      }
      const std::uint64_t t0 = total_phases(rt);
      const auto a = std::chrono::steady_clock::now();
      EXPECT_GT(grain::async([n] { return fib(n); }).get(), 0);
      fig[f].run_s.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
      tasks = total_phases(rt) - t0;
      if (!session) continue;
      const auto b = std::chrono::steady_clock::now();
      const auto st = session->stop();
      fig[f].stop_s.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - b).count());
      fig[f].bytes_per_event.push_back(static_cast<double>(st.bytes) /
                                       static_cast<double>(st.worker_events));
    }
  const double off = median(fig[0].run_s);
  std::printf("fib(%d), 2 workers, %llu task phases, medians of %d interleaved rounds\n", n,
              static_cast<unsigned long long>(tasks), runs);
  std::printf("%-10s %10s %12s %14s %14s\n", "format", "run ms", "ns/task", "stop ns/task",
              "bytes/event");
  for (std::size_t f = 0; f < formats.size(); ++f) {
    const double run = median(fig[f].run_s), stop = median(fig[f].stop_s);
    std::printf("%-10s %10.1f %12.1f %14.1f %14.2f\n",
                formats[f].empty() ? "off" : formats[f].c_str(), run * 1e3,
                (run - off) * 1e9 / static_cast<double>(tasks),
                stop * 1e9 / static_cast<double>(tasks), median(fig[f].bytes_per_event));
  }
}

}  // namespace
}  // namespace grain::test
