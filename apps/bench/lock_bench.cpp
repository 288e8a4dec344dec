// grain-bench-locks: contended grain::mutex and grain::condition_variable against std::mutex and
// std::condition_variable in std::thread code of the same shape (docs/benchmarks.md, "Contended
// locks").
//   mutex  every acquisition runs a critical section of --work steps on one shared lock:
//          grain-tasks   --ops tasks, each taking the lock once (the shape of a ported program
//                        that spawns one task per item), spawned by one task
//          grain-tasks-unlocked  the same tasks on data of their own, without the lock: what
//                        the tasks cost
//          grain-loops   one task per worker, each taking the lock --ops/P times
//          std-threads   one std::thread per worker, each taking a std::mutex --ops/P times
//   cv     a bounded queue of --capacity items, a lock and two condition variables; --pairs
//          producers and as many consumers pass --ops items (tasks, or std::threads)
// The systems of a shape run one after the other, --repeat times (paired runs); the medians
// and the ratios to std-threads are printed as one JSON line. --busy=N forks N children that
// spin until the program ends: a busy process beside the runtime, as on a shared machine.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/app_args.hpp"
#include "common/app_main.hpp"
#include "common/bench_common.hpp"
#include "grain/grain.hpp"

namespace {

namespace args = bench::args;

const char* const usage_text =
    "usage: grain-bench-locks [--shape=mutex|cv] [--ops=100000] [--work=20] [--pairs=P/2]\n"
    "                         [--capacity=64] [--repeat=5] [--busy=0] [--grain:threads=P]\n"
    "  mutex: grain-tasks (--ops tasks, one acquisition each), grain-loops (P tasks) and\n"
    "         std-threads (P threads) each make --ops acquisitions of one lock, a critical\n"
    "         section of --work steps each; grain-tasks-unlocked: the tasks without the lock\n"
    "  cv:    --pairs producers and consumers pass --ops items through a queue of --capacity\n"
    "         (grain tasks, then std::threads)\n"
    "  --busy=N forks N children that spin beside the runs; --repeat paired runs, medians\n"
    "  prints one JSON line; status 1 when a count is wrong\n";

struct options {
  std::string shape = "mutex";
  long ops = 100000, work = 20, pairs = 0, capacity = 64, repeat = 5, busy = 0;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const auto a = args::split(argv[i]);
    if (a.key == "--shape" && (a.value == "mutex" || a.value == "cv"))
      o.shape = a.value;
    else if (a.key == "--ops")
      o.ops = args::integer(a, 1, 1L << 40);
    else if (a.key == "--work")
      o.work = args::integer(a, 0, 1000000);
    else if (a.key == "--pairs")
      o.pairs = args::integer(a, 1, 10000);
    else if (a.key == "--capacity")
      o.capacity = args::integer(a, 1, 1L << 30);
    else if (a.key == "--repeat")
      o.repeat = args::integer(a, 1, 1000);
    else if (a.key == "--busy")
      o.busy = args::integer(a, 0, 64);
    else
      throw args::bad_argument{a.arg};
  }
  return o;
}

// The critical section: --work dependent steps on data the lock protects.
struct shared_data {
  std::uint64_t count = 0, mix = 1;
  void update(long work) {
    ++count;
    for (long i = 0; i < work; ++i) mix = mix * 6364136223846793005ULL + 1442695040888963407ULL;
  }
};

template <class Body>
double timed(Body body) {
  const auto t0 = bench::steady::now();
  body();
  return bench::seconds_since(t0);
}

// --- mutex -------------------------------------------------------------------------------------

// Spawned by one task, as a program's tasks spawn theirs. Without the lock (`locked` false)
// each task updates data of its own: what the tasks cost without the lock.
std::uint64_t grain_tasks(const options& o, bool locked) {
  grain::mutex m;
  shared_data d;
  std::atomic<std::uint64_t> unlocked_count{0};
  grain::async([&] {
    grain::task_group g;
    for (long i = 0; i < o.ops; ++i)
      if (locked)
        g.run([&] {
          std::lock_guard lock(m);
          d.update(o.work);
        });
      else
        g.run([&] {
          shared_data mine;
          mine.update(o.work);
          unlocked_count.fetch_add(mine.count + (mine.mix == 0), std::memory_order_relaxed);
        });
    g.wait();
  }).get();
  return locked ? d.count : unlocked_count.load();
}

// ops acquisitions spread over n loops, by `start(fn)` (a task or a thread each).
template <class Mutex, class Start, class Join>
std::uint64_t loops(const options& o, unsigned n, Start start, Join join) {
  Mutex m;
  shared_data d;
  for (unsigned k = 0; k < n; ++k) {
    const long mine = o.ops / n + (k < static_cast<unsigned long>(o.ops % n) ? 1 : 0);
    start([&m, &d, &o, mine] {
      for (long i = 0; i < mine; ++i) {
        std::lock_guard lock(m);
        d.update(o.work);
      }
    });
  }
  join();
  return d.count;
}

// --- condition variable ------------------------------------------------------------------------

template <class Mutex, class CondVar>
struct bounded_queue {
  Mutex m;
  CondVar not_empty, not_full;
  std::deque<long> items;
  std::size_t capacity;
  explicit bounded_queue(std::size_t c) : capacity(c) {}
  void push(long x) {
    std::unique_lock lock(m);
    not_full.wait(lock, [&] { return items.size() < capacity; });
    items.push_back(x);
    lock.unlock();
    not_empty.notify_one();
  }
  long pop() {
    std::unique_lock lock(m);
    not_empty.wait(lock, [&] { return !items.empty(); });
    const long x = items.front();
    items.pop_front();
    lock.unlock();
    not_full.notify_one();
    return x;
  }
};

// pairs producers and consumers; returns the number of items consumed (+1 each, checked).
template <class Mutex, class CondVar, class Start, class Join>
std::uint64_t producer_consumer(const options& o, Start start, Join join) {
  bounded_queue<Mutex, CondVar> q(static_cast<std::size_t>(o.capacity));
  std::vector<std::uint64_t> got(static_cast<std::size_t>(o.pairs), 0);
  for (long k = 0; k < o.pairs; ++k) {
    const long mine = o.ops / o.pairs + (k < o.ops % o.pairs ? 1 : 0);
    start([&q, mine] {
      for (long i = 0; i < mine; ++i) q.push(1);
    });
    start([&q, &got, k, mine] {
      std::uint64_t s = 0;
      for (long i = 0; i < mine; ++i) s += static_cast<std::uint64_t>(q.pop());
      got[static_cast<std::size_t>(k)] = s;
    });
  }
  join();
  std::uint64_t total = 0;
  for (auto s : got) total += s;
  return total;
}

// --- running -----------------------------------------------------------------------------------

struct system_runs {
  std::string name;
  std::vector<double> times;
  bool ok = true;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// std::threads started by `start`, joined by `join`.
struct thread_set {
  std::vector<std::thread> t;
  auto starter() {
    return [this](auto fn) { t.emplace_back(std::move(fn)); };
  }
  auto joiner() {
    return [this] {
      for (auto& x : t) x.join();
      t.clear();
    };
  }
};

struct task_set {
  grain::task_group g;
  auto starter() {
    return [this](auto fn) { g.run(std::move(fn)); };
  }
  auto joiner() {
    return [this] { g.wait(); };
  }
};

// One run of `system` in `shape`; false when its count is wrong.
bool run_once(const options& o, unsigned p, const std::string& system, double& seconds) {
  std::uint64_t count = 0;
  const auto expect = static_cast<std::uint64_t>(o.ops);
  if (o.shape == "mutex") {
    if (system == "grain-tasks" || system == "grain-tasks-unlocked") {
      seconds = timed([&] { count = grain_tasks(o, system == "grain-tasks"); });
    } else if (system == "grain-loops") {
      task_set s;
      seconds = timed([&] { count = loops<grain::mutex>(o, p, s.starter(), s.joiner()); });
    } else {
      thread_set s;
      seconds = timed([&] { count = loops<std::mutex>(o, p, s.starter(), s.joiner()); });
    }
  } else if (system == "grain-tasks") {
    task_set s;
    seconds = timed([&] {
      count =
          producer_consumer<grain::mutex, grain::condition_variable>(o, s.starter(), s.joiner());
    });
  } else {
    thread_set s;
    seconds = timed([&] {
      count = producer_consumer<std::mutex, std::condition_variable>(o, s.starter(), s.joiner());
    });
  }
  return count == expect;
}

// The busy neighbours: children that spin until they are killed (or the parent dies).
std::vector<pid_t> start_busy(long n) {
  std::vector<pid_t> kids;
  for (long i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      std::uint64_t x = 0;
      for (;;) asm volatile("" : "+r"(x));
    }
    if (pid > 0) kids.push_back(pid);
  }
  return kids;
}

void stop_busy(const std::vector<pid_t>& kids) {
  for (pid_t k : kids) kill(k, SIGKILL);
  for (pid_t k : kids) waitpid(k, nullptr, 0);
}

}  // namespace

static int run_main(int argc, char** argv) {
  // The busy children are forked before the runtime starts: a fork copies one thread only.
  options o;
  std::vector<char*> own;  // the program's own arguments (grain's are read by the runtime)
  for (int i = 0; i < argc; ++i)
    if (i == 0 || std::string(argv[i]).rfind("--grain:", 0) != 0) own.push_back(argv[i]);
  try {
    o = parse(static_cast<int>(own.size()), own.data());
  } catch (const args::bad_argument& e) {
    std::fprintf(stderr, "grain-bench-locks: bad argument '%s'\n%s", e.arg.c_str(), usage_text);
    return 2;
  }
  const std::vector<pid_t> kids = start_busy(o.busy);
  grain::runtime rt(argc, argv);
  const unsigned p = rt.num_workers();
  if (o.pairs == 0) o.pairs = std::max(1u, p / 2);
  std::vector<system_runs> systems;
  if (o.shape == "mutex")
    systems = {{"grain-tasks-unlocked", {}},
               {"grain-tasks", {}},
               {"grain-loops", {}},
               {"std-threads", {}}};
  else
    systems = {{"grain-tasks", {}}, {"std-threads", {}}};
  bool ok = true;
  for (long r = 0; r < o.repeat; ++r)
    for (auto& s : systems) {
      double t = 0;
      s.ok = run_once(o, p, s.name, t) && s.ok;
      ok = ok && s.ok;
      s.times.push_back(t);
    }
  stop_busy(kids);
  const double ref = median(systems.back().times);
  std::printf("{\"bench\":\"locks\",\"shape\":\"%s\",\"threads\":%u,\"ops\":%ld,\"work\":%ld,",
              o.shape.c_str(), p, o.ops, o.work);
  if (o.shape == "cv") std::printf("\"pairs\":%ld,\"capacity\":%ld,", o.pairs, o.capacity);
  std::printf("\"busy\":%ld,\"repeat\":%ld", o.busy, o.repeat);
  for (auto& s : systems) {
    const double m = median(s.times);
    std::printf(",\"%s_s\":%.6f,\"%s_vs_std\":%.3f", s.name.c_str(), m, s.name.c_str(),
                ref > 0 ? m / ref : 0.0);
  }
  std::printf(",\"ok\":%s}\n", ok ? "true" : "false");
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, "grain-bench-locks", usage_text, run_main);
}
