#pragma once
// The main() of bench-grain and bench-grain-group: the same command line, warm-up and timing
// for both ways of writing the benchmarks with grain (futures, task_group). The computation
// runs as a task (the main thread only waits), so P workers do the work, as with the peers.
// Workers: --grain:threads=P (or --threads=P, translated to --grain:threads=P).
#include <string>
#include <string_view>
#include <vector>

#include "common/bench_common.hpp"
#include "grain/grain.hpp"

namespace bench {

template <class Fib, class Skynet, class Uts>
int grain_bench_main(int argc, char** argv, const char* system, Fib fib, Skynet skynet, Uts uts) {
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
  options o = parse(static_cast<int>(own.size()) - 1, own.data());
  grain::runtime rt(ac, av.data());  // consumes the --grain:* arguments
  uts_params P(o);
  const int workers = static_cast<int>(rt.num_workers());

  {  // wake the workers before timing
    std::vector<grain::future<int>> warm;
    warm.reserve(64);
    for (int i = 0; i < 64; ++i) warm.push_back(grain::async([] { return 0; }));
    for (auto& w : warm) w.get();
  }
  return run_and_report(system, o, workers, [&]() -> long {
    return grain::async([&]() -> long {
             if (o.bench == "fib") return fib(o.n);
             if (o.bench == "skynet") return skynet(0, o.n);
             return uts(P, P.root());
           })
        .get();
  });
}

}  // namespace bench
