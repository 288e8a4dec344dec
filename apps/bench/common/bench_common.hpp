#pragma once
// Shared by every bench-<system> executable (apps/bench): the command line, the JSON result
// line, the benchmark definitions (fib, skynet, UTS) and the serial reference versions.
// Header-only and free of any runtime so the clang++/libomp executable can use it too.
//
// Command line (every executable):
//   --bench=fib|skynet|uts   --n=N   --threads=P   --warmup=W
//   UTS: --uts-b0=4 --uts-depth=10 --uts-seed=137 --uts-gran=300  (--n, when given for uts, is the
//   depth)
// Output: exactly one JSON line on stdout:
//   {"system":..,"bench":..,"n":..,"threads":..,"time_s":..,"tasks":..,"result":..,...}
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace bench {

// ---------------------------------------------------------------------------------------------
// Options

struct options {
  std::string bench = "fib";
  long n = -1;         // fib: argument; skynet: number of leaves (power of 10); uts: depth limit
  int threads = 1;     // workers
  int warmup = 0;      // untimed runs of the computation before the timed one
  double uts_b0 = 4;   // expected branching factor (T1: 4)
  int uts_depth = 10;  // depth limit (gen_mx): nodes at this depth are leaves (T1: 10)
  std::uint64_t uts_seed = 137;  // root seed: 3,900,141 nodes at depth 10 (T1: 4,130,071)
  int uts_gran = 300;            // hash rounds per node (UTS -g): serial run about 1 s here
};

inline constexpr long default_fib_n = 30;
inline constexpr long default_skynet_leaves = 1000000;

[[noreturn]] inline void usage(const char* prog, const char* bad) {
  std::fprintf(stderr,
               "%s: bad argument '%s'\n"
               "usage: %s --bench=fib|skynet|uts [--n=N] [--threads=P] [--warmup=W]\n"
               "          [--uts-b0=4] [--uts-depth=10] [--uts-seed=137] [--uts-gran=300]\n"
               "  fib:    N is the argument (default 30); one spawn per call with N >= 2\n"
               "  skynet: N is the number of leaves, a power of 10 (default 1000000)\n"
               "  uts:    N (if given) is the depth limit, same as --uts-depth\n",
               prog, bad, prog);
  std::exit(2);
}

inline bool take(const char* arg, const char* key, const char** value) {
  std::size_t k = std::strlen(key);
  if (std::strncmp(arg, key, k) != 0 || arg[k] != '=') return false;
  *value = arg + k + 1;
  return true;
}

inline long to_long(const char* prog, const char* arg, const char* v) {
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0') usage(prog, arg);
  return x;
}

// Parses argv[1..argc). Unknown arguments are an error (grain's --grain:* are removed by
// grain::runtime before this is called).
inline options parse(int argc, char** argv) {
  options o;
  const char* prog = argc > 0 ? argv[0] : "bench";
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = nullptr;
    if (take(a, "--bench", &v)) {
      o.bench = v;
      if (o.bench != "fib" && o.bench != "skynet" && o.bench != "uts") usage(prog, a);
    } else if (take(a, "--n", &v)) {
      o.n = to_long(prog, a, v);
    } else if (take(a, "--threads", &v)) {
      o.threads = static_cast<int>(to_long(prog, a, v));
      if (o.threads < 1) usage(prog, a);
    } else if (take(a, "--warmup", &v)) {
      o.warmup = static_cast<int>(to_long(prog, a, v));
    } else if (take(a, "--uts-b0", &v)) {
      o.uts_b0 = std::strtod(v, nullptr);
      if (!(o.uts_b0 > 0)) usage(prog, a);
    } else if (take(a, "--uts-depth", &v)) {
      o.uts_depth = static_cast<int>(to_long(prog, a, v));
    } else if (take(a, "--uts-gran", &v)) {
      o.uts_gran = static_cast<int>(to_long(prog, a, v));
      if (o.uts_gran < 1) usage(prog, a);
    } else if (take(a, "--uts-seed", &v)) {
      o.uts_seed = static_cast<std::uint64_t>(to_long(prog, a, v));
    } else {
      usage(prog, a);
    }
  }
  if (o.bench == "fib") {
    if (o.n < 0) o.n = default_fib_n;
  } else if (o.bench == "skynet") {
    if (o.n < 0) o.n = default_skynet_leaves;
    long p = 1;
    while (p < o.n) p *= 10;
    if (p != o.n || o.n < 1) usage(prog, "--n (skynet needs a power of 10)");
  } else {
    if (o.n >= 0) o.uts_depth = static_cast<int>(o.n);
    o.n = o.uts_depth;
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// fib: spawn fib(n-1) as a task, compute fib(n-2) in the caller, join. One spawn per call with
// n >= 2, so tasks(n) = fib(n+1) - 1.

inline long fib_serial(long n) {
  return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

inline long fib_tasks(long n) {
  long a = 0, b = 1;  // fib(0), fib(1)
  for (long i = 0; i < n; ++i) {
    long c = a + b;
    a = b;
    b = c;
  }
  return b - 1;  // fib(n+1) - 1
}

// ---------------------------------------------------------------------------------------------
// skynet: a 10-ary tree with `leaves` leaves; every node below the root is a spawned task;
// a leaf returns its index, inner nodes the sum of their children.
// Result: leaves*(leaves-1)/2. Tasks: leaves + leaves/10 + ... + 10 (all nodes but the root).

inline constexpr int skynet_div = 10;

inline long skynet_serial(long num, long size) {
  if (size == 1) return num;
  long sum = 0;
  long sub = size / skynet_div;
  for (int i = 0; i < skynet_div; ++i) sum += skynet_serial(num + i * sub, sub);
  return sum;
}

inline long skynet_tasks(long leaves) {
  long t = 0;
  for (long s = leaves; s > 1; s /= skynet_div) t += s;
  return t;
}

// ---------------------------------------------------------------------------------------------
// UTS (Unbalanced Tree Search), a T1-like geometric tree with a fixed shape function:
// every node above the depth limit draws its number of children from a geometric
// distribution with mean b0 (p = 1/(1+b0), k = floor(log(1-u)/log(1-p))); nodes at the depth
// limit are leaves. As in UTS, the root draws from the same distribution.
//
// Instead of UTS's SHA-1 splittable RNG we use splitmix64 (Steele, Lea, Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014), used as a hash:
//   child_state(s, i) = mix64(s + (i+1) * 0x9E3779B97F4A7C15)
//   u(s)              = (mix64(s ^ 0xD1B54A32D192ED03) >> 11) * 2^-53   in [0, 1)
// with mix64 the splitmix64 finaliser. The tree is thus a pure function of
// (b0, depth, seed), identical on every system and thread count; the result is the node
// count. Every node below the root is a spawned task, so tasks = nodes - 1.

struct uts_node {
  std::uint64_t state;
  int depth;
};

inline constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

struct uts_params {
  double b0;
  int depth;
  std::uint64_t seed;
  int gran;
  double log_q;  // log(1 - p), p = 1/(1+b0)

  explicit uts_params(const options& o)
      : b0(o.uts_b0),
        depth(o.uts_depth),
        seed(o.uts_seed),
        gran(o.uts_gran),
        log_q(std::log(1.0 - 1.0 / (1.0 + o.uts_b0))) {}

  uts_node root() const { return {mix64(seed), 0}; }

  int num_children(const uts_node& nd) const {
    if (nd.depth >= depth) return 0;
    work(nd);
    double u = static_cast<double>(mix64(nd.state ^ 0xD1B54A32D192ED03ULL) >> 11) * 0x1.0p-53;
    return static_cast<int>(std::floor(std::log1p(-u) / log_q));
  }

  // The node's work (UTS -g): `gran` dependent splitmix64 rounds, kept by an empty asm.
  // It does not change the tree.
  void work(const uts_node& nd) const {
    std::uint64_t h = nd.state;
    for (int g = 0; g < gran; ++g) h = mix64(h + 0x9E3779B97F4A7C15ULL);
    __asm__ __volatile__("" : : "r"(h));
  }

  static uts_node child(const uts_node& nd, int i) {
    return {mix64(nd.state + static_cast<std::uint64_t>(i + 1) * 0x9E3779B97F4A7C15ULL),
            nd.depth + 1};
  }
};

inline long uts_serial(const uts_params& P, const uts_node& nd) {
  int k = P.num_children(nd);
  long count = 1;
  for (int i = 0; i < k; ++i) count += uts_serial(P, uts_params::child(nd, i));
  return count;
}

// Per-node storage for k child results (k is unbounded: geometric tail): on the stack up to
// `inline_n`, on the heap beyond (rare: P(k > 16) = (b0/(1+b0))^17, about 2 % for b0 = 4).
template <class T, int inline_n = 16>
class child_slots {
 public:
  explicit child_slots(int k) : k_(k) {
    if (k > inline_n) heap_ = std::make_unique<T[]>(static_cast<std::size_t>(k));
  }
  T& operator[](int i) { return heap_ ? heap_[i] : local_[i]; }
  int size() const { return k_; }

 private:
  int k_;
  T local_[inline_n]{};
  std::unique_ptr<T[]> heap_;
};

// ---------------------------------------------------------------------------------------------
// Timing and the JSON line

using steady = std::chrono::steady_clock;

inline double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

// A "KEY:  N kB" line of /proc/self/status (VmRSS, VmHWM, VmPTE, ...) in KiB; -1 when absent.
inline long proc_status_kb(const char* key) {
  long kb = -1;
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    const std::size_t n = std::strlen(key);
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, key, n) == 0 && line[n] == ':') {
        kb = std::atol(line + n + 1);
        break;
      }
    std::fclose(f);
  }
  return kb;
}

// Peak resident memory of this process in KiB: VmHWM from /proc/self/status (getrusage's
// ru_maxrss would include the parent's size at fork, which survives exec).
inline long max_rss_kb() {
  if (const long kb = proc_status_kb("VmHWM"); kb >= 0) return kb;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// Expected task count for the benchmark (uts needs the result: nodes - 1).
inline long tasks_of(const options& o, long result) {
  if (o.bench == "fib") return fib_tasks(o.n);
  if (o.bench == "skynet") return skynet_tasks(o.n);
  return result - 1;
}

inline void print_json(const char* system, const options& o, int threads, double time_s,
                       long result) {
  std::printf(
      "{\"system\":\"%s\",\"bench\":\"%s\",\"n\":%ld,\"threads\":%d,\"time_s\":%.6f,"
      "\"tasks\":%ld,\"result\":%ld",
      system, o.bench.c_str(), o.n, threads, time_s, tasks_of(o, result), result);
  if (o.bench == "uts")
    std::printf(",\"uts_b0\":%g,\"uts_depth\":%d,\"uts_seed\":%llu,\"uts_gran\":%d", o.uts_b0,
                o.uts_depth, static_cast<unsigned long long>(o.uts_seed), o.uts_gran);
  std::printf(",\"max_rss_kb\":%ld}\n", max_rss_kb());
  std::fflush(stdout);
}

// Runs `compute` (returning the result) warmup+1 times, times the last one, prints the line.
template <class F>
int run_and_report(const char* system, const options& o, int threads, F&& compute) {
  for (int w = 0; w < o.warmup; ++w) (void)compute();
  auto t0 = steady::now();
  long result = compute();
  double t = seconds_since(t0);
  print_json(system, o, threads, t, result);
  return 0;
}

}  // namespace bench
