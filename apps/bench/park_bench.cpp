// grain-bench-park: many suspended tasks at once (docs/benchmarks.md, "Many suspended tasks").
// --tasks tasks each suspend on one shared grain::latch (--wait=latch) or on a future of their
// own (--wait=future); when all of them wait, the latch opens (or every promise is set) and
// the tasks finish. Every suspended task holds a user-thread stack until it resumes, so the
// run measures what parking costs per task as the count grows: the time until every task
// waits ("park_s"), the time until all finished after the release ("finish_s"), and the
// memory while all wait: the resident pages ("parked_rss_mb": those each parked stack touched)
// and the page tables that map them ("parked_pte_mb", not part of the resident size).
//   grain-bench-park [--tasks=100000] [--wait=latch|future] [--repeat=1] [--grain:...]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/app_args.hpp"
#include "common/app_main.hpp"
#include "common/bench_common.hpp"
#include "grain/grain.hpp"
#include "grain/lcos/latch.hpp"

namespace {

namespace args = bench::args;

const char* const usage_text =
    "usage: grain-bench-park [--tasks=100000] [--wait=latch|future] [--repeat=1]\n"
    "  --tasks tasks suspend on one latch (or each on a future of its own) until all wait,\n"
    "  then are released; prints one JSON line per run (park_s, finish_s, parked_rss_mb,\n"
    "  parked_pte_mb, peak_rss_mb);\n"
    "  status 1 when a task did not run to the end\n";

struct options {
  long tasks = 100000, repeat = 1;
  std::string wait = "latch";
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const auto a = args::split(argv[i]);
    if (a.key == "--tasks")
      o.tasks = args::integer(a, 1, 100000000);
    else if (a.key == "--repeat")
      o.repeat = args::integer(a, 1, 1000);
    else if (a.key == "--wait" && (a.value == "latch" || a.value == "future"))
      o.wait = a.value;
    else
      throw args::bad_argument{a.arg};
  }
  return o;
}

// Waits (on this non-worker thread) until `n` tasks have said they are about to wait.
void until_arrived(const std::atomic<long>& arrived, long n) {
  while (arrived.load(std::memory_order_acquire) < n)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

// A line of /proc/self/status in MiB ("VmRSS", "VmPTE": the page tables), 0 when absent.
double status_mb(const char* key) {
  return static_cast<double>(std::max(0L, bench::proc_status_kb(key))) / 1024.0;
}

struct result {
  double park_s = 0, finish_s = 0;
  double rss_mb = 0, pte_mb = 0;  // while every task waits
  long finished = 0;
};

result run_latch(long n) {
  result r;
  grain::latch open(1);
  std::atomic<long> arrived{0}, finished{0};
  grain::task_group g;
  const auto t0 = bench::steady::now();
  for (long i = 0; i < n; ++i)
    g.run([&] {
      arrived.fetch_add(1, std::memory_order_release);
      open.wait();
      finished.fetch_add(1, std::memory_order_relaxed);
    });
  until_arrived(arrived, n);
  r.park_s = bench::seconds_since(t0);
  r.rss_mb = status_mb("VmRSS");
  r.pte_mb = status_mb("VmPTE");
  const auto t1 = bench::steady::now();
  open.count_down();
  g.wait();
  r.finish_s = bench::seconds_since(t1);
  r.finished = finished.load();
  return r;
}

result run_future(long n) {
  result r;
  std::vector<grain::promise<int>> promises(static_cast<std::size_t>(n));
  std::atomic<long> arrived{0}, finished{0};
  grain::task_group g;
  const auto t0 = bench::steady::now();
  for (long i = 0; i < n; ++i) {
    grain::future<int> f = promises[static_cast<std::size_t>(i)].get_future();
    g.run([&arrived, &finished, f = std::move(f)]() mutable {
      arrived.fetch_add(1, std::memory_order_release);
      finished.fetch_add(f.get(), std::memory_order_relaxed);
    });
  }
  until_arrived(arrived, n);
  r.park_s = bench::seconds_since(t0);
  r.rss_mb = status_mb("VmRSS");
  r.pte_mb = status_mb("VmPTE");
  const auto t1 = bench::steady::now();
  for (auto& p : promises) p.set_value(1);
  g.wait();
  r.finish_s = bench::seconds_since(t1);
  r.finished = finished.load();
  return r;
}

}  // namespace

static int run_main(int argc, char** argv) {
  grain::runtime rt(argc, argv);  // takes the --grain:* arguments out of argv
  options o;
  try {
    o = parse(argc, argv);
  } catch (const args::bad_argument& e) {
    std::fprintf(stderr, "grain-bench-park: bad argument '%s'\n%s", e.arg.c_str(), usage_text);
    return 2;
  }
  bool ok = true;
  for (long k = 0; k < o.repeat; ++k) {
    const result r = o.wait == "latch" ? run_latch(o.tasks) : run_future(o.tasks);
    ok = ok && r.finished == o.tasks;
    std::printf(
        "{\"bench\":\"park\",\"wait\":\"%s\",\"threads\":%u,\"tasks\":%ld,\"park_s\":%.4f,"
        "\"finish_s\":%.4f,\"parked_rss_mb\":%.1f,\"parked_pte_mb\":%.1f,\"peak_rss_mb\":%.1f,"
        "\"finished\":%ld}\n",
        o.wait.c_str(), rt.num_workers(), o.tasks, r.park_s, r.finish_s, r.rss_mb, r.pte_mb,
        static_cast<double>(bench::max_rss_kb()) / 1024.0, r.finished);
    std::fflush(stdout);
  }
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, "grain-bench-park", usage_text, run_main);
}
