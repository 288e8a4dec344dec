// bench-taskflow: Taskflow (Huang et al. 2022; header-only), not vendored: scripts/bench
// --taskflow-dir DIR compiles this file against DIR. Written as Taskflow's own fibonacci and
// skynet examples are: a tf::TaskGroup per call, silent_async for the children, corun to join
// (the waiting worker runs other tasks meanwhile). fib spawns fib(n-1) and computes fib(n-2)
// itself, as every other system here. tf::Executor(P) has P workers; the main thread waits in
// future::get and runs no tasks.
#include <taskflow/taskflow.hpp>

#include "common/bench_common.hpp"

#if !defined(TF_VERSION) || TF_VERSION < 400000
#error "bench-taskflow needs Taskflow 4.0 or newer (tf::Executor::task_group)"
#endif

namespace {

long fib(tf::Executor& ex, long n) {
  if (n < 2) return n;
  long a = 0;
  tf::TaskGroup tg = ex.task_group();
  tg.silent_async([&ex, &a, n] { a = fib(ex, n - 1); });
  const long b = fib(ex, n - 2);
  tg.corun();
  return a + b;
}

long skynet(tf::Executor& ex, long num, long size) {
  if (size == 1) return num;
  long r[bench::skynet_div];
  const long sub = size / bench::skynet_div;
  tf::TaskGroup tg = ex.task_group();
  for (int i = 0; i < bench::skynet_div; ++i)
    tg.silent_async([&ex, &r, i, num, sub] { r[i] = skynet(ex, num + i * sub, sub); });
  tg.corun();
  long sum = 0;
  for (long x : r) sum += x;
  return sum;
}

long uts(tf::Executor& ex, const bench::uts_params& P, const bench::uts_node& nd) {
  const int k = P.num_children(nd);
  if (k == 0) return 1;
  bench::child_slots<long> r(k);
  tf::TaskGroup tg = ex.task_group();
  for (int i = 0; i < k; ++i)
    tg.silent_async([&ex, &P, &r, &nd, i] { r[i] = uts(ex, P, bench::uts_params::child(nd, i)); });
  tg.corun();
  long count = 1;
  for (int i = 0; i < k; ++i) count += r[i];
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  bench::options o = bench::parse(argc, argv);
  bench::uts_params P(o);
  tf::Executor ex(static_cast<std::size_t>(o.threads));
  // Start the workers before timing.
  ex.async([&ex] { return fib(ex, 10); }).get();
  return bench::run_and_report("taskflow", o, o.threads, [&]() -> long {
    return ex
        .async([&]() -> long {
          if (o.bench == "fib") return fib(ex, o.n);
          if (o.bench == "skynet") return skynet(ex, 0, o.n);
          return uts(ex, P, P.root());
        })
        .get();
  });
}
