// grain-mergesort: Jiang et al. 2020's second benchmark — split, sort leaves, merge — with the
// chosen task kinds (the merges in Jiang et al. 2020) on the critical pool or at high priority;
// every run is verified: sorted, and a permutation of the input (equal to std::sort of a copy).
//   grain-mergesort [--n=10000000] [--leaf=20000] [--input=random|sorted|reverse|equal|few|
//                   organ|sawtooth] [--seed=1] [--critical=none|auto|merge,split,sort]
//                   [--critical-via=pool|priority] [--form=listing|dataflow] [--repeat=R]
//                   [--grain:pools=critical:C]
// --form=dataflow: the merges as dataflow on their halves (what --critical=auto needs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "../critical/command_line.hpp"
#include "common/app_main.hpp"
#include "grain/grain.hpp"
#include "inputs.hpp"
#include "sort_tasks.hpp"

namespace {

struct options {
  long n = 10'000'000;
  long leaf = 20'000;
  std::string input = "random";
  long seed = 1;
  std::string critical = "none";
  std::string via = "pool";
  int repeat = 1;
  bool dataflow = false;  // --form=dataflow
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto [key, val] = critical::split_option(a);
    if (key == "--n")
      o.n = critical::to_long(a, val, 0, 1L << 31);
    else if (key == "--leaf")
      o.leaf = critical::to_long(a, val, 1, 1L << 31);
    else if (key == "--input")
      o.input = val;
    else if (key == "--seed")
      o.seed = critical::to_long(a, val, 0, 1L << 62);
    else if (key == "--critical")
      o.critical = val;
    else if (key == "--critical-via")
      o.via = val;
    else if (key == "--repeat")
      o.repeat = static_cast<int>(critical::to_long(a, val, 1, 1000));
    else if (key == "--form" && (val == "listing" || val == "dataflow"))
      o.dataflow = val == "dataflow";
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
  std::vector<int> input;
  try {
    o = parse(argc, argv);
    route.parse_kinds(o.critical, mergesort::kinds());
    route.parse_via(o.via);
    route.resolve();
    input = mergesort::make_input(o.input, static_cast<std::size_t>(o.n),
                                  static_cast<std::uint64_t>(o.seed));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr,
                 "grain-mergesort: %s\n"
                 "usage: grain-mergesort [--n=10000000] [--leaf=20000] [--input=random|sorted|"
                 "reverse|equal|few|organ|sawtooth]\n"
                 "                       [--seed=1] [--critical=none|auto|merge,split,sort]\n"
                 "                       [--critical-via=pool|priority] [--form=listing|dataflow]\n"
                 "                       [--repeat=R] [--grain:...]\n",
                 e.what());
    return 2;
  }
  std::vector<int> expected = input;
  std::sort(expected.begin(), expected.end());
  for (int r = 0; r < o.repeat; ++r) {
    std::vector<int> v = input;
    const auto t0 = std::chrono::steady_clock::now();
    if (o.dataflow)
      mergesort::dataflow_sort(v, static_cast<std::size_t>(o.leaf), route);
    else
      mergesort::parallel_sort(v, static_cast<std::size_t>(o.leaf), route);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (v != expected) {
      const bool sorted = std::is_sorted(v.begin(), v.end());
      std::fprintf(stderr, "grain-mergesort: result is %s\n",
                   sorted ? "sorted but not a permutation of the input" : "not sorted");
      return 1;
    }
    std::printf(
        "mergesort(n=%ld, leaf=%ld, input=%s, %s) in %.4f s on %u workers (pools %s); "
        "critical %s; verified\n",
        o.n, o.leaf, o.input.c_str(), o.dataflow ? "dataflow" : "listing", s, rt.num_workers(),
        critical::pools_line(rt).c_str(), route.describe().c_str());
  }
  std::fflush(stdout);
  return 0;
}

// --help (bench::app_main).
constexpr char usage_text[] =
    "usage: grain-mergesort [--n=10000000] [--leaf=20000] "
    "[--input=random|sorted|reverse|equal|few|\n"
    "                       organ|sawtooth] [--seed=1] [--critical=none|auto|merge,split,sort]\n"
    "                       [--critical-via=pool|priority] [--form=listing|dataflow] [--repeat=R]\n"
    "                       [--grain:pools=critical:C] [--grain:...]\n"
    "Parallel merge sort (split, sort leaves, merge); every run is verified.\n"
    "  --n=N              elements (default 10,000,000)\n"
    "  --leaf=L           elements sorted serially by one task (default 20,000)\n"
    "  --input=KIND       the input's order (default random)\n"
    "  --seed=S           the input's seed (default 1)\n"
    "  --critical=K       task kinds sent to the critical pool (or priority)\n"
    "  --critical-via=V   pool (--grain:pools=critical:C) or priority\n"
    "  --form=F           listing (futures) or dataflow (what --critical=auto needs)\n"
    "  --repeat=R         timed runs (default 1)\n";

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, "grain-mergesort", usage_text, run_main);
}
