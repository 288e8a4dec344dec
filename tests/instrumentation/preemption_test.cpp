// The preemption counters (docs/counters.md, "Preemption"): /threads/time/preempted and
// /threads/count/involuntary-switches per worker, pool and locality, read from /proc by the
// sampler; unavailable with the reason where the kernel's files are missing; larger beside a busy
// thread on the worker's CPU than alone. The formulas that exclude preempted time are checked on
// a fake source whose kernel figures the test controls.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fake_source.hpp"
#include "grain/clock.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/threads_counters.hpp"
#include "preemption.hpp"

namespace gi = grain::instrumentation;
namespace gd = grain::instrumentation::detail;

namespace {

// A fake source whose workers are threads of this process: `tid` for every worker, and the
// kernel's files under `dir` (a missing directory plays a kernel without them).
class threaded_source final : public gi::stats_source, public gd::worker_threads {
 public:
  threaded_source(unsigned workers, pid_t tid, std::string dir)
      : fake_({{"default", workers}}), tid_(tid), dir_(std::move(dir)) {}
  unsigned num_workers() const override { return fake_.num_workers(); }
  const std::vector<grain::pool_info>& pools() const override { return fake_.pools(); }
  const grain::worker_stats& stats(unsigned w) const override { return fake_.stats(w); }
  std::size_t queue_length(unsigned w, grain::queue_kind k) const override {
    return fake_.queue_length(w, k);
  }
  unsigned active_workers(unsigned p) const override { return fake_.active_workers(p); }
  pid_t os_thread(unsigned) const override { return tid_; }
  std::string task_dir() const override { return dir_; }
  grain::test::fake_source fake_;

 private:
  pid_t tid_;
  std::string dir_;
};

std::string description(gi::counter_registry& r, const std::string& name) {
  auto l = r.list(name);
  return l.size() == 1 ? l[0].description : std::string("(no counter ") + name + ")";
}

double thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

void pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ASSERT_EQ(sched_setaffinity(0, sizeof set, &set), 0);
}

double value_of(const char* name) {
  auto v = gi::registry().value(name);
  return v && v->available ? v->value : -1;
}

}  // namespace

TEST(Preemption, ParsesTheKernelsFiles) {
  std::uint64_t v = 0;
  const std::string schedstat = "2512340 98765 12\n";
  EXPECT_TRUE(gd::parse_run_delay(schedstat.data(), schedstat.size(), v));
  EXPECT_EQ(v, 98765u);
  const std::string bad = "2512340\n";
  EXPECT_FALSE(gd::parse_run_delay(bad.data(), bad.size(), v));
  const std::string status =
      "Name:\tworker\nState:\tR (running)\nvoluntary_ctxt_switches:\t40\n"
      "nonvoluntary_ctxt_switches:\t7\n";
  EXPECT_TRUE(gd::parse_involuntary(status.data(), status.size(), v));
  EXPECT_EQ(v, 7u) << "the involuntary count, not the voluntary one";
  const std::string no_line = "Name:\tworker\nvoluntary_ctxt_switches:\t40\n";
  EXPECT_FALSE(gd::parse_involuntary(no_line.data(), no_line.size(), v));
}

TEST(Preemption, CountersExistForEveryWorkerPoolAndTheLocality) {
  grain::runtime rt({"--grain:threads=2"}, false);
  for (const char* c : {"time/preempted", "count/involuntary-switches", "idle-rate-unpreempted",
                        "time/average-overhead-unpreempted", "time/average-management",
                        "time/average-management-unpreempted", "management-overhead-unpreempted"}) {
    for (const char* inst : {"locality#0/pool#default/worker#0", "locality#0/pool#default/worker#1",
                             "locality#0/pool#default/total", "locality#0/total"}) {
      const std::string name = std::string("/threads{") + inst + "}/" + c;
      EXPECT_TRUE(gi::registry().contains(name)) << name;
    }
    EXPECT_EQ(gi::registry().list(std::string("/threads{*}/") + c).size(), 4u) << c;
  }
  // Once the workers started, each has its thread's figures (where this kernel keeps them).
  const std::string why = description(gi::registry(), "/threads{locality#0/total}/time/preempted");
  if (why.find("(unavailable: ") != std::string::npos)
    GTEST_SKIP() << "run delay unavailable here: " << why;
  // Both workers must have started (a task may run inline in get(), and a loaded machine
  // starts threads late); then a little work, so that Σt_func, the idle rate's denominator,
  // is not 0.
  std::optional<gi::counter_value> v;
  for (int i = 0; i < 2000; ++i) {
    v = gi::registry().value("/threads{locality#0/total}/time/preempted");
    if (v && v->available) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(v && v->available) << "a worker's thread was never read";
  std::vector<grain::future<void>> fs;
  for (int i = 0; i < 20; ++i)
    fs.push_back(grain::async([] {
      const std::uint64_t t0 = grain::now_ns();
      while (grain::now_ns() - t0 < 1'000'000) {
      }
    }));
  for (auto& f : fs) f.get();
  for (const char* c : {"time/preempted", "count/involuntary-switches", "idle-rate-unpreempted",
                        "time/average-overhead-unpreempted", "management-overhead-unpreempted"}) {
    for (auto& q : gi::registry().query(std::string("/threads{*}/") + c)) {
      EXPECT_TRUE(q.available) << q.name;
      EXPECT_GE(q.value, 0) << q.name;
    }
  }
}

TEST(Preemption, UnavailableWithTheReasonWhenTheKernelFilesAreMissing) {
  threaded_source src(2, gd::sched_reader::this_thread(), "/nonexistent/grain-preemption-test");
  src.fake_.run(0, 10, 1000, 200);
  gi::counter_registry r;
  r.add_provider(gi::make_threads_provider(src));
  for (const char* c : {"time/preempted", "idle-rate-unpreempted",
                        "time/average-overhead-unpreempted", "count/involuntary-switches"}) {
    const std::string name = std::string("/threads{locality#0/total}/") + c;
    auto v = r.value(name);
    ASSERT_TRUE(v.has_value()) << name;
    EXPECT_FALSE(v->available) << name << " must not read as " << v->value;
    const std::string d = description(r, name);
    EXPECT_NE(d.find("(unavailable: cannot read /nonexistent/grain-preemption-test/"),
              std::string::npos)
        << d;
  }
  // The plain formulas do not depend on the kernel's files.
  auto ir = r.value("/threads/idle-rate");
  ASSERT_TRUE(ir && ir->available);
  EXPECT_NEAR(ir->value, 200.0 / 1200.0, 1e-9);
}

TEST(Preemption, ASourceWithoutOsThreadsSaysSo) {
  grain::test::fake_source src({{"default", 1}});
  gi::counter_registry r;
  r.add_provider(gi::make_threads_provider(src));
  EXPECT_FALSE(r.value("/threads/time/preempted")->available);
  EXPECT_NE(description(r, "/threads{locality#0/total}/time/preempted").find("no OS threads"),
            std::string::npos);
}

// The Eq. 1p-4p formulas on known figures: this thread's real run delay is the P of the
// interval, so the expected values follow from it.
TEST(Preemption, FormulasTakePreemptedTimeOutOfTheOverhead) {
  threaded_source src(1, gd::sched_reader::this_thread(), "/proc/self/task");
  gi::counter_registry r;
  r.add_provider(gi::make_threads_provider(src));
  if (!r.value("/threads/time/preempted")->available)
    GTEST_SKIP() << description(r, "/threads{locality#0/total}/time/preempted");
  r.reset();
  // Make some run delay on this thread: yield beside a thread spinning on the same CPU.
  const int cpu = sched_getcpu();
  cpu_set_t old;
  sched_getaffinity(0, sizeof old, &old);
  pin_this_thread(cpu);
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    pin_this_thread(cpu);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  const std::uint64_t t0 = grain::now_ns();
  while (grain::now_ns() - t0 < 100'000'000) {
  }
  stop = true;
  spinner.join();
  sched_setaffinity(0, sizeof old, &old);
  // 1000 tasks, 0.1 s of task code, 0.9 s outside it of which 0.3 s idle search: more than
  // the spin above can have waited, so the preempted time is all taken out.
  auto& s = src.fake_.slots[0];
  s.tasks.add(1000);
  s.exec_ns.add(100'000'000);
  s.func_ns.add(1'000'000'000);
  s.idle_ns.add(300'000'000);
  gi::counter_snapshot snap;
  r.sample(snap);
  const double p = snap.find("/threads{locality#0/total}/time/preempted")->value;
  ASSERT_GT(p, 0) << "a thread sharing its CPU with a spinning one waited for it";
  ASSERT_LT(p, 0.9e9);
  const double o = 0.9e9, o_u = o - p;
  auto at = [&](const char* c) {
    auto* v = snap.find(std::string("/threads{locality#0/total}/") + c);
    return v && v->available ? v->value : -1;
  };
  EXPECT_NEAR(at("time/average-management"), 0.6e9 / 1000, 1e-6);
  EXPECT_NEAR(at("idle-rate-unpreempted"), o_u / (1e9 - p), 1e-9);
  EXPECT_NEAR(at("time/average-overhead-unpreempted"), o_u / 1000, 1e-6);
  EXPECT_NEAR(at("time/average-management-unpreempted"), 0.6e9 * (o_u / o) / 1000, 1e-6);
  EXPECT_NEAR(at("management-overhead-unpreempted"), o_u, 1e-6);
  EXPECT_LE(at("idle-rate-unpreempted"), at("idle-rate"));
}

// A worker that shares its CPU with a spinning thread waits for it; alone it waits far less.
// The worker does a fixed amount of CPU work, so the extra wait beside the spinner is about
// that work whatever else runs on the machine; pairs are repeated to find a steady moment.
TEST(Preemption, BesideABusyLoopTheWorkerWaitsMoreThanAlone) {
  grain::runtime rt({"--grain:threads=1", "--grain:bind=compact"}, false);
  grain::async([] {}).get();
  const std::string why = description(gi::registry(), "/threads{locality#0/total}/time/preempted");
  if (why.find("(unavailable: ") != std::string::npos)
    GTEST_SKIP() << "run delay unavailable here: " << why;
  ASSERT_GE(value_of("/threads/time/preempted"), 0);
  // One CPU for both: the worker's first (the only one when --grain:bind took effect).
  int cpu = -1;
  grain::async([&cpu] {
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    for (int c = 0; c < CPU_SETSIZE && cpu < 0; ++c)
      if (CPU_ISSET(c, &set)) cpu = c;
    pin_this_thread(cpu);
  }).get();
  ASSERT_GE(cpu, 0);

  constexpr double work_ns = 150e6;  // the worker's CPU time per run
  struct result {
    double preempted, mid, switches, wall;
  };
  auto run = [&](bool beside) {
    std::atomic<bool> stop{false}, spinning{false};
    std::thread spinner;
    if (beside)
      spinner = std::thread([&] {
        pin_this_thread(cpu);
        spinning = true;
        while (!stop.load(std::memory_order_relaxed)) {
        }
      });
    while (beside && !spinning) std::this_thread::yield();
    const double p0 = value_of("/threads/time/preempted");
    const double s0 = value_of("/threads/count/involuntary-switches");
    const std::uint64_t t0 = grain::now_ns();
    double mid = 0;
    for (int half = 0; half < 2; ++half) {
      std::vector<grain::future<void>> fs;
      for (int i = 0; i < 50; ++i)
        fs.push_back(grain::async([] {
          const double c0 = thread_cpu_ns();
          while (thread_cpu_ns() - c0 < work_ns / 100) {
          }
        }));
      for (auto& f : fs) f.get();
      if (half == 0) mid = value_of("/threads/time/preempted") - p0;
    }
    result r{value_of("/threads/time/preempted") - p0, mid,
             value_of("/threads/count/involuntary-switches") - s0,
             static_cast<double>(grain::now_ns() - t0)};
    stop = true;
    if (spinner.joinable()) spinner.join();
    std::printf(
        "%s: preempted %.1f ms (%.1f ms at half-time) of %.1f ms, %.0f involuntary "
        "switches\n",
        beside ? "beside a busy loop" : "alone", r.preempted / 1e6, r.mid / 1e6, r.wall / 1e6,
        r.switches);
    return r;
  };
  bool held = false;
  for (int attempt = 0; attempt < 3 && !held; ++attempt) {
    const result alone = run(false);
    const result beside = run(true);
    EXPECT_GT(beside.preempted, 0);
    EXPECT_GT(beside.mid, 0) << "preempted time grows while the spinner runs";
    EXPECT_GT(beside.preempted, beside.mid) << "preempted time grows while the spinner runs";
    EXPECT_GT(beside.switches, 0) << "the kernel took the CPU from the worker";
    // Beside the spinner the worker waits about as long as it works (fair share): ask for
    // a quarter of that above what it waited alone.
    held = beside.preempted > alone.preempted + 0.25 * work_ns;
  }
  EXPECT_TRUE(held) << "beside a busy loop the worker should wait at least " << 0.25 * work_ns / 1e6
                    << " ms more than alone (see the lines above)";
}

// The cost docs/counters.md gives ("Preemption"): what the sampler pays per worker and sample.
// A pread of schedstat always; a pread of status only when the thread went through the
// scheduler since the last read (the worst case is both). Read on another, sleeping, thread.
//   grain_instrumentation_tests --gtest_also_run_disabled_tests
//     --gtest_filter='Preemption.DISABLED_CostOfReadingOneWorker'
TEST(Preemption, DISABLED_CostOfReadingOneWorker) {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread target([&] {
    tid = gd::sched_reader::this_thread();
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (tid == 0) std::this_thread::yield();
  gd::sched_reader reader("/proc/self/task", 1);
  if (!reader.delay_unavailable().empty()) GTEST_SKIP() << reader.delay_unavailable();
  constexpr int n = 20000;
  // Median over 5 rounds of n calls of `f`, in ns of this thread's CPU time per call.
  auto median = [&](auto f) {
    std::vector<double> per;
    for (int round = 0; round < 5; ++round) {
      const double c0 = thread_cpu_ns();
      for (int i = 0; i < n; ++i) f();
      per.push_back((thread_cpu_ns() - c0) / n);
    }
    std::sort(per.begin(), per.end());
    return per[2];
  };
  char buf[4096];
  auto pread_cost = [&](const char* file) {
    const std::string path = "/proc/self/task/" + std::to_string(tid.load()) + "/" + file;
    const int fd = ::open(path.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0) << path;
    const double ns = median([&] { EXPECT_GT(pread(fd, buf, sizeof buf, 0), 0); });
    ::close(fd);
    return ns;
  };
  const double schedstat = pread_cost("schedstat"), status = pread_cost("status");
  const double typical = median([&] {
    const auto t = reader.read(0, tid);
    EXPECT_TRUE(t.delay_ok && t.switches_ok);
  });
  std::printf(
      "per worker and sample (medians of 5 x %d): sched_reader::read %.2f us (the thread slept "
      "1 ms at a time); pread of schedstat %.2f us, of status %.2f us: worst case %.2f us, "
      "%.4f %% of a core per worker at the default 10 ms interval\n",
      n, typical / 1e3, schedstat / 1e3, status / 1e3, (schedstat + status) / 1e3,
      (schedstat + status) / 1e7 * 100);
  stop = true;
  target.join();
}
