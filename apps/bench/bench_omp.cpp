// bench-omp-gcc / bench-omp-clang: OpenMP tasks; the same source is built by g++ (libgomp)
// and by clang++ (libomp). A parallel region of P threads, one thread starts the root in a
// `single`, every spawn is an `omp task`, joins are `taskwait`.
#include <omp.h>

#include "common/bench_common.hpp"

#if defined(__clang__)
#define BENCH_OMP_SYSTEM "omp-clang"
#else
#define BENCH_OMP_SYSTEM "omp-gcc"
#endif

namespace {

long fib(long n) {
  if (n < 2) return n;
  long a = 0;
#pragma omp task shared(a) firstprivate(n)
  a = fib(n - 1);
  long b = fib(n - 2);
#pragma omp taskwait
  return a + b;
}

long skynet(long num, long size) {
  if (size == 1) return num;
  long r[bench::skynet_div];
  long sub = size / bench::skynet_div;
  for (int i = 0; i < bench::skynet_div; ++i) {
#pragma omp task shared(r) firstprivate(i, num, sub)
    r[i] = skynet(num + i * sub, sub);
  }
#pragma omp taskwait
  long sum = 0;
  for (long x : r) sum += x;
  return sum;
}

long uts(const bench::uts_params& P, const bench::uts_node& nd) {
  int k = P.num_children(nd);
  if (k == 0) return 1;
  bench::child_slots<long> r(k);
  for (int i = 0; i < k; ++i) {
#pragma omp task shared(r, P, nd) firstprivate(i)
    r[i] = uts(P, bench::uts_params::child(nd, i));
  }
#pragma omp taskwait
  long count = 1;
  for (int i = 0; i < k; ++i) count += r[i];
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  bench::options o = bench::parse(argc, argv);
  bench::uts_params P(o);
  omp_set_dynamic(0);
  int team = 0;
  // Create the thread team before timing.
#pragma omp parallel num_threads(o.threads)
  {
#pragma omp single
    team = omp_get_num_threads();
  }
  return bench::run_and_report(BENCH_OMP_SYSTEM, o, team, [&]() -> long {
    long result = 0;
#pragma omp parallel num_threads(o.threads)
    {
#pragma omp single
      {
        if (o.bench == "fib")
          result = fib(o.n);
        else if (o.bench == "skynet")
          result = skynet(0, o.n);
        else
          result = uts(P, P.root());
      }
    }
    return result;
  });
}
