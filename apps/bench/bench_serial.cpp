// bench-serial: the reference — plain recursion, no tasks. Its time is T_serial in the
// per-task overhead (T_p * p - T_serial) / tasks.
#include "common/bench_common.hpp"

int main(int argc, char** argv) {
  bench::options o = bench::parse(argc, argv);
  bench::uts_params P(o);
  return bench::run_and_report("serial", o, 1, [&]() -> long {
    if (o.bench == "fib") return bench::fib_serial(o.n);
    if (o.bench == "skynet") return bench::skynet_serial(0, o.n);
    return bench::uts_serial(P, P.root());
  });
}
