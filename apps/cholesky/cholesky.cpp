// grain-cholesky: tiled right-looking Cholesky (Jiang et al. 2020's first benchmark) on an n×n SPD
// matrix with b×b tiles, POTRF/TRSM/SYRK/GEMM tasks as a dataflow graph, the chosen task kinds
// on the critical pool (or at high priority), the residual checked, and with --peer one call
// of OpenBLAS's threaded dpotrf on the whole matrix in the same run (threads = workers), after
// the tiled runs.
//   grain-cholesky [--n=2048] [--b=256] [--critical=none|auto|potrf,trsm,syrk,gemm]
//                  [--critical-via=pool|priority] [--repeat=R] [--peer] [--check=on|off]
//                  [--grain:pools=critical:C] [--grain:...]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "../critical/command_line.hpp"
#include "common/app_main.hpp"
#include "factor.hpp"
#include "grain/grain.hpp"
#include "threaded_peer.hpp"
#include "tile_kernels.hpp"
#include "tiled_matrix.hpp"

namespace {

struct options {
  int n = 2048;
  int b = 256;
  std::string critical = "none";
  std::string via = "pool";
  int repeat = 1;
  bool peer = false;
  bool check = true;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto [key, val] = critical::split_option(a);
    if (key == "--n")
      o.n = static_cast<int>(critical::to_long(a, val, 1, 46340));  // n² fits in an int
    else if (key == "--b")
      o.b = static_cast<int>(critical::to_long(a, val, 1, 46340));
    else if (key == "--critical")
      o.critical = val;
    else if (key == "--critical-via")
      o.via = val;
    else if (key == "--repeat")
      o.repeat = static_cast<int>(critical::to_long(a, val, 1, 1000));
    else if (a == "--peer")
      o.peer = true;
    else if (key == "--check" && (val == "on" || val == "off"))
      o.check = val == "on";
    else
      throw std::invalid_argument("unknown option '" + a + "'");
  }
  return o;
}

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  grain::runtime rt(argc, argv);
  options o;
  critical::routing route;
  try {
    o = parse(argc, argv);
    route.parse_kinds(o.critical, cholesky::kinds());
    route.parse_via(o.via);
    route.resolve();
  } catch (const std::invalid_argument& e) {
    std::fprintf(
        stderr,
        "grain-cholesky: %s\n"
        "usage: grain-cholesky [--n=2048] [--b=256] [--critical=none|auto|potrf,trsm,syrk,gemm]\n"
        "                      [--critical-via=pool|priority] [--repeat=R] [--peer]\n"
        "                      [--check=on|off] [--grain:pools=critical:C] [--grain:...]\n",
        e.what());
    return 2;
  }
  if (!cholesky::use_one_blas_thread()) {
    std::fprintf(stderr,
                 "grain-cholesky: the OpenBLAS linked is not its pthread build (the serial one "
                 "is not safe to call from several workers at once)\n");
    return 1;
  }
  const unsigned workers = rt.num_workers();
  for (int r = 0; r < o.repeat; ++r) {
    cholesky::tiled_matrix m(o.n, o.b);
    m.fill_spd();
    const auto t0 = std::chrono::steady_clock::now();
    try {
      cholesky::factor(m, route);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "grain-cholesky: %s\n", e.what());
      return 1;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string res = "not checked";
    if (o.check) {
      const double rr = cholesky::residual(o.n, m.dense_lower());
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3g", rr);
      res = buf;
      if (!(rr < 1e-12)) {
        std::fprintf(stderr, "grain-cholesky: residual %s is too large\n", buf);
        return 1;
      }
    }
    std::printf(
        "cholesky(n=%d, b=%d, %d tiles) in %.4f s = %.2f GFLOP/s on %u workers (pools %s); "
        "critical %s; residual %s\n",
        o.n, o.b, m.tiles(), s, cholesky::flops(o.n) / s * 1e-9, workers,
        critical::pools_line(rt).c_str(), route.describe().c_str(), res.c_str());
  }
  if (o.peer) {
    cholesky::peer_result p;
    try {
      p = cholesky::run_threaded_dpotrf(o.n, static_cast<int>(workers), o.check);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "grain-cholesky: peer: %s\n", e.what());
      return 1;
    }
    std::printf(
        "dpotrf(n=%d) threaded OpenBLAS, %d threads, in %.4f s = %.2f GFLOP/s; residual %.3g\n",
        o.n, p.threads, p.seconds, cholesky::flops(o.n) / p.seconds * 1e-9, p.residual);
  }
  std::fflush(stdout);
  return 0;
}

// --help (bench::app_main).
constexpr char usage_text[] =
    "usage: grain-cholesky [--n=2048] [--b=256] [--critical=none|auto|potrf,trsm,syrk,gemm]\n"
    "                      [--critical-via=pool|priority] [--repeat=R] [--peer] [--check=on|off]\n"
    "                      [--grain:pools=critical:C] [--grain:...]\n"
    "Tiled Cholesky factorisation as a dataflow of POTRF/TRSM/SYRK/GEMM tasks; the residual "
    "checked.\n"
    "  --n=N              matrix order (default 2048)\n"
    "  --b=B              tile order (default 256)\n"
    "  --critical=K       task kinds sent to the critical pool (or priority): none, auto or a "
    "list\n"
    "  --critical-via=V   pool (--grain:pools=critical:C) or priority\n"
    "  --repeat=R         timed runs (default 1)\n"
    "  --peer             also one call of OpenBLAS's threaded dpotrf on the whole matrix\n"
    "  --check=on|off     compute the residual (default on)\n";

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, "grain-cholesky", usage_text, run_main);
}
