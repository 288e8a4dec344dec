// bench-tbb: oneTBB tbb::task_group in a task_arena of P threads (the main thread is one of
// them). fib spawns fib(n-1) with task_group::run, computes fib(n-2) itself, then waits.
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include "common/bench_common.hpp"

namespace {

long fib(long n) {
  if (n < 2) return n;
  long a = 0;
  tbb::task_group g;
  g.run([&a, n] { a = fib(n - 1); });
  long b = fib(n - 2);
  g.wait();
  return a + b;
}

long skynet(long num, long size) {
  if (size == 1) return num;
  long r[bench::skynet_div];
  long sub = size / bench::skynet_div;
  tbb::task_group g;
  for (int i = 0; i < bench::skynet_div; ++i)
    g.run([&r, i, num, sub] { r[i] = skynet(num + i * sub, sub); });
  g.wait();
  long sum = 0;
  for (long x : r) sum += x;
  return sum;
}

long uts(const bench::uts_params& P, const bench::uts_node& nd) {
  int k = P.num_children(nd);
  if (k == 0) return 1;
  bench::child_slots<long> r(k);
  tbb::task_group g;
  for (int i = 0; i < k; ++i)
    g.run([&P, &r, &nd, i] { r[i] = uts(P, bench::uts_params::child(nd, i)); });
  g.wait();
  long count = 1;
  for (int i = 0; i < k; ++i) count += r[i];
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  bench::options o = bench::parse(argc, argv);
  bench::uts_params P(o);
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                         static_cast<std::size_t>(o.threads));
  tbb::task_arena arena(o.threads);
  arena.initialize();
  // Start the workers before timing.
  arena.execute([] {
    tbb::task_group g;
    for (int i = 0; i < 64; ++i) g.run([] {});
    g.wait();
  });
  return bench::run_and_report("tbb", o, o.threads, [&]() -> long {
    return arena.execute([&]() -> long {
      if (o.bench == "fib") return fib(o.n);
      if (o.bench == "skynet") return skynet(0, o.n);
      return uts(P, P.root());
    });
  });
}
