// bench-grain-group: the benchmarks written with grain::task_group, the shape of bench-tbb
// (tbb::task_group): each child writes its result into the parent's frame, the parent waits
// for the group. Command line and timing: grain_bench_main.hpp (as bench-grain).
#include "common/bench_common.hpp"
#include "grain/grain.hpp"
#include "grain_bench_main.hpp"

namespace {

long fib(long n) {
  if (n < 2) return n;
  long a = 0;
  grain::task_group g;
  g.run([&a, n] { a = fib(n - 1); });
  long b = fib(n - 2);
  g.wait();
  return a + b;
}

long skynet(long num, long size) {
  if (size == 1) return num;
  long r[bench::skynet_div];
  long sub = size / bench::skynet_div;
  grain::task_group g;
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
  grain::task_group g;
  for (int i = 0; i < k; ++i)
    g.run([&P, &r, &nd, i] { r[i] = uts(P, bench::uts_params::child(nd, i)); });
  g.wait();
  long count = 1;
  for (int i = 0; i < k; ++i) count += r[i];
  return count;
}

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  return bench::grain_bench_main(argc, argv, "grain-group", fib, skynet, uts);
}

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    return grain::fatal_error("bench-grain-group", e);
  }
}
