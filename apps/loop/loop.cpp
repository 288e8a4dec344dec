// grain-loop: a parallel loop whose iterations each busy-spin for a given time, to measure
// what a chunker costs against the work (docs/parallel-loops.md, scripts/sweep-loop).
//   grain-loop --n=N --cost-ns=C --chunker=static:N|dynamic:N|guided:N|auto|adaptive|seq
//              [--repeat=R] [--warmup=W] --grain:threads=2
// The spin is arithmetic (a dependent multiply-add chain) calibrated at start-up, not a clock
// read or a sleep: a 10 ns iteration really is 10 ns of work, and a preempted iteration costs
// the time it lost, as real work would.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "common/app_main.hpp"
#include "grain/detail/task_overhead.hpp"
#include "grain/grain.hpp"

namespace {

// k steps of an LCG; the asm keeps the compiler from folding the chain or the result away.
inline std::uint64_t spin(std::uint64_t k, std::uint64_t x) {
  for (std::uint64_t j = 0; j < k; ++j) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));
  }
  return x;
}

inline void keep(std::uint64_t x) {
  asm volatile("" : : "r"(x));
}

// Each iteration's chain starts from the previous one's result on this thread: without this the
// CPU overlaps the independent chains of consecutive iterations and a "10 ns" iteration costs 4.
thread_local std::uint64_t chain = 1;

// ns per spin step: the fastest of several timed runs (the others were disturbed).
double calibrate_step_ns() {
  const std::uint64_t steps = 2'000'000;
  double best = 1e9;
  for (int r = 0; r < 7; ++r) {
    const std::uint64_t t0 = grain::now_ns();
    keep(spin(steps, static_cast<std::uint64_t>(r)));
    best = std::min(best, static_cast<double>(grain::now_ns() - t0) / steps);
  }
  return best;
}

// CPU time of the whole process (all workers), in seconds: the work plus what the runtime spent,
// unaffected by other programs taking the cores (unlike the wall time).
double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct options {
  std::size_t n = 10'000'000;
  double cost_ns = 10;
  std::string chunker = "adaptive";
  int repeat = 5;
  int warmup = 1;
};

// A bad argument: main prints it with the usage and exits with status 2 after the runtime has
// stopped (std::exit with worker threads still running would abort).
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void usage(const std::string& why) {
  throw usage_error(why);
}

double parse_number(const std::string& opt, const std::string& v, double min) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x >= min))
    usage(opt + "=" + v + ": expected a number >= " + std::to_string(static_cast<long>(min)));
  return x;
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    const std::string key = a.substr(0, eq);
    const std::string val = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key == "--n")
      o.n = static_cast<std::size_t>(parse_number(key, val, 0));
    else if (key == "--cost-ns")
      o.cost_ns = parse_number(key, val, 0);
    else if (key == "--chunker")
      o.chunker = val;
    else if (key == "--repeat")
      o.repeat = static_cast<int>(parse_number(key, val, 1));
    else if (key == "--warmup")
      o.warmup = static_cast<int>(parse_number(key, val, 0));
    else
      usage("unknown argument '" + a + "'");
  }
  return o;
}

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  grain::runtime rt(argc, argv);
  options o;
  grain::execution::chunker ch;
  try {
    o = parse(argc, argv);
    if (o.chunker != "seq") ch = grain::execution::parse_chunker(o.chunker);
  } catch (const std::exception& e) {  // usage_error, or the chunker's invalid_argument
    const bool chunker_error = dynamic_cast<const usage_error*>(&e) == nullptr;
    std::fprintf(stderr,
                 "grain-loop: %s%s\n"
                 "usage: grain-loop [--n=N] [--cost-ns=NS] "
                 "[--chunker=static:N|dynamic:N|guided:N|auto|adaptive|seq] [--repeat=R] "
                 "[--warmup=W] [--grain:...]\n",
                 e.what(), chunker_error ? " (or seq)" : "");
    return 2;
  }
  const bool sequential = o.chunker == "seq";

  const double step_ns = calibrate_step_ns();
  const std::uint64_t steps = static_cast<std::uint64_t>(std::llround(o.cost_ns / step_ns));
  auto body = [steps](std::size_t i) { chain = spin(steps, chain ^ i); };

  std::vector<double> times, cpu;
  std::uint64_t chunk = 0, chunks = 0;
  auto& st = grain::loop_statistics();
  for (int r = 0; r < o.warmup + o.repeat; ++r) {
    const std::uint64_t chunks0 = st.chunks.load();
    const double c0 = process_cpu_s();
    const auto t0 = std::chrono::steady_clock::now();
    if (sequential)
      grain::for_loop(grain::execution::seq, std::size_t{0}, o.n, body);
    else
      grain::for_loop(grain::execution::par.with(ch), std::size_t{0}, o.n, body);
    keep(chain);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double c = process_cpu_s() - c0;
    if (r < o.warmup) continue;
    times.push_back(s);
    cpu.push_back(c);
    chunk = sequential ? o.n : st.last_chunk_size.load();
    chunks = sequential ? 1 : st.chunks.load() - chunks0;
  }
  const double median = median_of(times);
  const double min = *std::min_element(times.begin(), times.end());

  std::printf("times_s=");
  for (std::size_t i = 0; i < times.size(); ++i) std::printf("%s%.6f", i ? "," : "", times[i]);
  std::printf("\n");
  std::printf(
      "grain-loop n=%zu cost_ns=%g chunker=%s workers=%u median_s=%.6f min_s=%.6f cpu_s=%.6f "
      "chunk=%llu "
      "chunks=%llu step_ns=%.3f steps=%llu t_o_ns=%.0f loop_lambda=%g\n",
      o.n, o.cost_ns, sequential ? "seq" : ch.name().c_str(), rt.num_workers(), median, min,
      median_of(cpu), static_cast<unsigned long long>(chunk),
      static_cast<unsigned long long>(chunks), step_ns, static_cast<unsigned long long>(steps),
      grain::detail::task_overhead_ns(), grain::knobs().at("loop.lambda").value());
  return 0;
}

// --help (bench::app_main).
constexpr char usage_text[] =
    "usage: grain-loop --n=N --cost-ns=C --chunker=static:N|dynamic:N|guided:N|auto|adaptive|seq\n"
    "                  [--repeat=R] [--warmup=W] [--grain:...]\n"
    "A parallel loop of N iterations that each compute for C ns: what a chunker costs.\n"
    "  --n=N              iterations\n"
    "  --cost-ns=C        work per iteration in nanoseconds (calibrated arithmetic, not a sleep)\n"
    "  --chunker=K        static:N, dynamic:N, guided:N, auto, adaptive, or seq (no parallelism)\n"
    "  --repeat=R         timed runs (default 5)\n"
    "  --warmup=W         untimed runs first (default 1)\n";

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, "grain-loop", usage_text, run_main);
}
