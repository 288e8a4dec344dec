// bench-grain: grain::async (launch::async: every call a task) and future::get. fib spawns
// fib(n-1), computes fib(n-2) in the caller, then gets the future. The computation runs as a
// task (the main thread only waits), so P workers do the work, as with the peers.
// Workers: --grain:threads=P (or --threads=P, translated to --grain:threads=P).
#include <string>
#include <string_view>
#include <vector>

#include "common/bench_common.hpp"
#include "grain/grain.hpp"

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

int main(int argc, char** argv) {
  // --threads=P means --grain:threads=P here.
  std::vector<std::string> args(argv, argv + argc);
  for (auto& a : args)
    if (a.rfind("--threads=", 0) == 0) a = "--grain:threads=" + a.substr(10);
  std::vector<char*> av;
  av.reserve(args.size() + 1);
  for (auto& a : args) av.push_back(a.data());
  av.push_back(nullptr);
  int ac = argc;

  // Parse the benchmark's own arguments first: a bad one exits before any worker thread exists.
  std::vector<char*> own;
  for (char* a : av)
    if (!a || std::string_view(a).rfind("--grain:", 0) != 0) own.push_back(a);
  bench::options o = bench::parse(static_cast<int>(own.size()) - 1, own.data());
  grain::runtime rt(ac, av.data());  // consumes the --grain:* arguments
  bench::uts_params P(o);
  const int workers = static_cast<int>(rt.num_workers());

  {  // wake the workers before timing
    std::vector<grain::future<int>> warm;
    warm.reserve(64);
    for (int i = 0; i < 64; ++i) warm.push_back(grain::async([] { return 0; }));
    for (auto& w : warm) w.get();
  }
  return bench::run_and_report("grain", o, workers, [&]() -> long {
    return grain::async([&]() -> long {
             if (o.bench == "fib") return fib(o.n);
             if (o.bench == "skynet") return skynet(0, o.n);
             return uts(P, P.root());
           })
        .get();
  });
}
