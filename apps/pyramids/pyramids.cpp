// grain-pyramids: the Inncabs Pyramids application on grain — a 2-D Jacobi heat stencil
// computed by the recursive cache-oblivious space-time decomposition (apps/bench/kernels/
// pyramids.hpp), each parallel cut's pieces grain tasks, a trapezoid of at most --cutoff
// point-updates one base task. The result is compared bitwise with a plain serial Jacobi
// (computed before the timed runs; the counters are reset after it, so /threads counters
// describe the parallel runs only). Exit 1 on a difference, 2 on a bad argument.
//   grain-pyramids [--n=1024] [--steps=512] [--cutoff=262144] [--repeat=R] [--verify=1]
//                  [--grain:...]
#include <chrono>
#include <cstdio>
#include <vector>

#include "common/app_args.hpp"
#include "common/app_main.hpp"
#include "grain/grain.hpp"
#include "kernels/pyramids.hpp"

namespace {

namespace pyr = bench::pyramids;
namespace args = bench::args;

// The decomposition's parallel step: all but the last piece as tasks, the last in the caller.
struct grain_par {
  template <class A, class B>
  void operator()(A&& a, B&& b) const {
    auto fa = grain::async(grain::annotate("pyramids", a));
    b();
    fa.get();
  }
  template <class A, class B, class C, class D>
  void operator()(A&& a, B&& b, C&& c, D&& d) const {
    auto fa = grain::async(grain::annotate("pyramids", a));
    auto fb = grain::async(grain::annotate("pyramids", b));
    auto fc = grain::async(grain::annotate("pyramids", c));
    d();
    fa.get();
    fb.get();
    fc.get();
  }
};

struct options {
  int n = 1024;
  int steps = 512;
  long cutoff = 262144;
  int repeat = 1;
  bool verify = true;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const auto a = args::split(argv[i]);
    if (a.key == "--n")
      o.n = static_cast<int>(args::integer(a, 3, 32768));
    else if (a.key == "--steps")
      o.steps = static_cast<int>(args::integer(a, 1, 1 << 20));
    else if (a.key == "--cutoff")
      o.cutoff = args::integer(a, 1, 1L << 40);
    else if (a.key == "--repeat")
      o.repeat = static_cast<int>(args::integer(a, 1, 1000));
    else if (a.key == "--verify")
      o.verify = args::integer(a, 0, 1) == 1;
    else
      throw args::bad_argument{a.arg};
  }
  return o;
}

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  grain::runtime rt(argc, argv);
  options o;
  try {
    o = parse(argc, argv);
  } catch (const args::bad_argument& e) {
    std::fprintf(stderr,
                 "grain-pyramids: bad argument '%s'\n"
                 "usage: grain-pyramids [--n=1024 (3..32768)] [--steps=512] "
                 "[--cutoff=262144 (points x steps per task)] [--repeat=R] [--verify=0|1] "
                 "[--grain:...]\n",
                 e.arg.c_str());
    return 2;
  }
  std::vector<double> reference;
  if (o.verify) {
    pyr::grid g(o.n);
    pyr::jacobi_serial(g, o.steps);
    reference = g.after(o.steps);
  }
  grain::counters::reset();  // the counters describe the parallel runs, not the reference
  for (int r = 0; r < o.repeat; ++r) {
    pyr::grid g(o.n);
    pyr::solver s(g, o.cutoff);
    const auto t0 = std::chrono::steady_clock::now();
    grain::async([&] { s.run(grain_par{}, o.steps); }).get();
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const long diff = o.verify ? pyr::first_difference(reference, g.after(o.steps)) : -1;
    const double updates = static_cast<double>(o.n - 2) * (o.n - 2) * o.steps;
    std::printf(
        "pyramids n=%d steps=%d cutoff=%ld: %llu base tasks in %.4f s on %u workers "
        "(%.2f ns per point-update); %s\n",
        o.n, o.steps, o.cutoff, static_cast<unsigned long long>(s.base_tasks()), sec,
        rt.num_workers(), 1e9 * sec / updates,
        !o.verify  ? "not verified"
        : diff < 0 ? "matches the serial Jacobi"
                   : "DIFFERS FROM the serial Jacobi");
    if (diff >= 0) {
      std::fprintf(stderr, "grain-pyramids: first difference at point %ld\n", diff);
      return 1;
    }
  }
  return 0;
}

// --help (bench::app_main).
constexpr char usage_text[] =
    "usage: grain-pyramids [--n=1024] [--steps=512] [--cutoff=262144] [--repeat=R] [--verify=1]\n"
    "                      [--grain:...]\n"
    "A 2-D Jacobi heat stencil by recursive space-time decomposition; checked bitwise against "
    "serial.\n"
    "  --n=N              grid points per side (3..32768, default 1024)\n"
    "  --steps=S          time steps (default 512)\n"
    "  --cutoff=C         point-updates of one base task (default 262,144)\n"
    "  --repeat=R         timed runs (default 1)\n"
    "  --verify=0|1       compare with a serial run (default 1)\n";

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, "grain-pyramids", usage_text, run_main);
}
