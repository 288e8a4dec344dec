// bench-libfork: libfork (Williams and Elliott 2024; header-only, C++20 coroutines), not
// vendored: scripts/bench --libfork-dir DIR compiles this file against DIR/include. fib forks
// fib(n-1), calls fib(n-2) inline and joins, as every other system here; skynet forks nine
// children and calls the tenth; UTS forks all children but the last, which it calls. The
// scheduler is lazy_pool(P) (workers sleep when idle, as grain's and TBB's do); the main thread
// waits in sync_wait and runs no tasks.
#include <libfork.hpp>
#include <vector>

#include "common/bench_common.hpp"

namespace {

constexpr auto fib = [](auto fib, long n) -> lf::task<long> {
  if (n < 2) co_return n;
  long a = 0, b = 0;
  co_await lf::fork(&a, fib)(n - 1);
  co_await lf::call(&b, fib)(n - 2);
  co_await lf::join;
  co_return a + b;
};

constexpr auto skynet = [](auto skynet, long num, long size) -> lf::task<long> {
  if (size == 1) co_return num;
  long r[bench::skynet_div] = {};
  const long sub = size / bench::skynet_div;
  for (int i = 0; i + 1 < bench::skynet_div; ++i)
    co_await lf::fork(&r[i], skynet)(num + i * sub, sub);
  co_await lf::call(&r[bench::skynet_div - 1], skynet)(num + (bench::skynet_div - 1) * sub, sub);
  co_await lf::join;
  long sum = 0;
  for (long x : r) sum += x;
  co_return sum;
};

constexpr auto uts = [](auto uts, const bench::uts_params* P,
                        bench::uts_node nd) -> lf::task<long> {
  const int k = P->num_children(nd);
  if (k == 0) co_return 1;
  bench::child_slots<long> r(k);
  for (int i = 0; i + 1 < k; ++i) co_await lf::fork(&r[i], uts)(P, bench::uts_params::child(nd, i));
  co_await lf::call(&r[k - 1], uts)(P, bench::uts_params::child(nd, k - 1));
  co_await lf::join;
  long count = 1;
  for (int i = 0; i < k; ++i) count += r[i];
  co_return count;
};

}  // namespace

int main(int argc, char** argv) {
  bench::options o = bench::parse(argc, argv);
  bench::uts_params P(o);
  lf::lazy_pool pool(static_cast<std::size_t>(o.threads));
  // Start the workers before timing.
  (void)lf::sync_wait(pool, fib, 10L);
  return bench::run_and_report("libfork", o, o.threads, [&]() -> long {
    if (o.bench == "fib") return lf::sync_wait(pool, fib, o.n);
    if (o.bench == "skynet") return lf::sync_wait(pool, skynet, 0L, o.n);
    return lf::sync_wait(pool, uts, &P, P.root());
  });
}
