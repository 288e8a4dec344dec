// bench-fiber: Boost.Fiber with the work_stealing scheduling algorithm on P threads (the main
// thread and P-1 helpers). Every spawn is a boost::fibers::fiber (launch::post, default
// fixedsize stack), every join a fiber::join(). work_stealing is used with suspend=false
// (Boost's default): idle threads keep looking for work instead of sleeping, because with
// suspend=true a sleeping thread is only woken for fibers made ready remotely, not for work it
// could steal.
#include <boost/fiber/all.hpp>
#include <thread>
#include <vector>

#include "common/bench_common.hpp"

namespace bf = boost::fibers;

namespace {

long fib(long n) {
  if (n < 2) return n;
  long a = 0;
  bf::fiber f([&a, n] { a = fib(n - 1); });
  long b = fib(n - 2);
  f.join();
  return a + b;
}

long skynet(long num, long size) {
  if (size == 1) return num;
  long r[bench::skynet_div];
  bf::fiber f[bench::skynet_div];
  long sub = size / bench::skynet_div;
  for (int i = 0; i < bench::skynet_div; ++i)
    f[i] = bf::fiber([&r, i, num, sub] { r[i] = skynet(num + i * sub, sub); });
  long sum = 0;
  for (int i = 0; i < bench::skynet_div; ++i) {
    f[i].join();
    sum += r[i];
  }
  return sum;
}

long uts(const bench::uts_params& P, const bench::uts_node& nd) {
  int k = P.num_children(nd);
  if (k == 0) return 1;
  bench::child_slots<long> r(k);
  bench::child_slots<bf::fiber> f(k);
  for (int i = 0; i < k; ++i)
    f[i] = bf::fiber([&P, &r, &nd, i] { r[i] = uts(P, bench::uts_params::child(nd, i)); });
  long count = 1;
  for (int i = 0; i < k; ++i) {
    f[i].join();
    count += r[i];
  }
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  bench::options o = bench::parse(argc, argv);
  bench::uts_params P(o);
  const auto p = static_cast<std::uint32_t>(o.threads);

  bf::mutex mtx;
  bf::condition_variable_any cv;
  bool done = false;
  std::vector<std::thread> helpers;
  for (std::uint32_t i = 1; i < p; ++i) {
    helpers.emplace_back([&] {
      bf::use_scheduling_algorithm<bf::algo::work_stealing>(p);
      std::unique_lock<bf::mutex> lk(mtx);
      cv.wait(lk, [&] { return done; });  // suspends this thread's main fiber: it runs/steals
    });
  }
  // Returns when all p threads have installed the scheduler (work_stealing has a barrier).
  bf::use_scheduling_algorithm<bf::algo::work_stealing>(p);

  int rc = bench::run_and_report("fiber", o, o.threads, [&]() -> long {
    if (o.bench == "fib") return fib(o.n);
    if (o.bench == "skynet") return skynet(0, o.n);
    return uts(P, P.root());
  });

  {
    std::unique_lock<bf::mutex> lk(mtx);
    done = true;
  }
  cv.notify_all();
  for (auto& t : helpers) t.join();
  return rc;
}
