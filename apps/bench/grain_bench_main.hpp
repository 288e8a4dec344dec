#pragma once
// The main() of bench-grain and bench-grain-group: the same command line, warm-up and timing
// for both ways of writing the benchmarks with grain (futures, task_group). The computation
// runs as a task (the main thread only waits), so P workers do the work, as with the peers.
// Workers: --grain:threads=P (or --threads=P, translated to --grain:threads=P).
#include "common/bench_common.hpp"
#include "grain/grain.hpp"
#include "grain_command_line.hpp"

namespace bench {

template <class Fib, class Skynet, class Uts>
int grain_bench_main(int argc, char** argv, const char* system, Fib fib, Skynet skynet, Uts uts) {
  grain_command_line cl(argc, argv);
  options o = parse(cl.own_argc(), cl.own_argv());
  grain::runtime rt(cl.argc(), cl.argv());
  uts_params P(o);
  const int workers = static_cast<int>(rt.num_workers());
  wake_workers();
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
