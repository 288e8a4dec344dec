// bench-grain: grain::async (launch::async: every call a task) and future::get. fib spawns
// fib(n-1), computes fib(n-2) in the caller, then gets the future. bench-grain-group writes
// the same with grain::task_group (bench_grain_group.cpp). Command line: grain_bench_main.hpp.
#include "common/bench_common.hpp"
#include "grain/grain.hpp"
#include "grain_bench_main.hpp"

namespace {

long fib(long n) {
  if (n < 2) return n;
  grain::future<long> f = grain::async([n] { return fib(n - 1); });
  long b = fib(n - 2);
  return f.get() + b;
}

long skynet(long num, long size) {
  if (size == 1) return num;
  grain::future<long> f[bench::skynet_div];
  long sub = size / bench::skynet_div;
  for (int i = 0; i < bench::skynet_div; ++i)
    f[i] = grain::async([i, num, sub] { return skynet(num + i * sub, sub); });
  long sum = 0;
  for (auto& x : f) sum += x.get();
  return sum;
}

long uts(const bench::uts_params& P, const bench::uts_node& nd) {
  int k = P.num_children(nd);
  if (k == 0) return 1;
  bench::child_slots<grain::future<long>> f(k);
  for (int i = 0; i < k; ++i)
    f[i] = grain::async([&P, c = bench::uts_params::child(nd, i)] { return uts(P, c); });
  long count = 1;
  for (int i = 0; i < k; ++i) count += f[i].get();
  return count;
}

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  return bench::grain_bench_main(argc, argv, "grain", fib, skynet, uts);
}

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    return grain::fatal_error("bench-grain", e);
  }
}
