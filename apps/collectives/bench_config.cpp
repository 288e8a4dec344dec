// grain-collectives-bench's options (bench_config.hpp): --key=value, each checked as read.
#include "bench_config.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace collectives_bench {

namespace {

struct kv {
  std::string key, value, arg;
};

kv split(const std::string& s) {
  const auto eq = s.find('=');
  if (eq == std::string::npos) return {s, "", s};
  return {s.substr(0, eq), s.substr(eq + 1), s};
}

long integer(const kv& a, long lo, long hi) {
  char* end = nullptr;
  const long x = std::strtol(a.value.c_str(), &end, 10);
  if (a.value.empty() || *end != '\0' || x < lo || x > hi)
    throw bad_option{a.arg + ": expected an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]"};
  return x;
}

double real(const kv& a, double lo, double hi) {
  char* end = nullptr;
  const double x = std::strtod(a.value.c_str(), &end);
  if (a.value.empty() || *end != '\0' || !std::isfinite(x) || x < lo || x > hi)
    throw bad_option{a.arg + ": expected a number in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]"};
  return x;
}

}  // namespace

const char* overlap_name(overlap_mode m) {
  switch (m) {
    case overlap_mode::off:
      return "off";
    case overlap_mode::sequential:
      return "sequential";
    case overlap_mode::parallel:
      return "parallel";
  }
  return "?";
}

std::string usage() {
  return "usage: grain-collectives-bench [--variant=grain|omp-static|omp-dynamic|omp-tasks|"
         "omp-iallreduce|mpi]\n"
         "  [--iterations=N] [--warmup=N] [--threads=N] [--tasks=N per rank]\n"
         "  [--dist=uniform|scaled|gaussian|poisson|exponential] [--a=X] [--b=X]\n"
         "  [--unit-us=T] [--fraction=F] [--per-rank] [--seed=S]\n"
         "  [--overlap=off|sequential|parallel] [--overlap-units=X] [--overlap-quantum=X]\n"
         "  [--lookahead=K] [--latency] [--iters-per-us=X] [--calibrate] [--grain:...]\n"
         "Under mpirun -np R. Distribution parameters are in quanta of --unit-us: uniform "
         "[a, b], scaled s=a, gaussian mu=a sigma=b, poisson and exponential mean=a.\n";
}

config parse(int argc, char** argv) {
  config c;
  bool a_given = false, b_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s.rfind("--grain:", 0) == 0) continue;
    const kv a = split(s);
    if (a.key == "--variant") {
      static const std::pair<const char*, variant> names[] = {
          {"grain", variant::grain},
          {"omp-static", variant::omp_static},
          {"omp-dynamic", variant::omp_dynamic},
          {"omp-tasks", variant::omp_tasks},
          {"omp-iallreduce", variant::omp_iallreduce},
          {"mpi", variant::mpi}};
      bool found = false;
      for (const auto& [n, v] : names)
        if (a.value == n) {
          c.v = v;
          c.variant_name = n;
          found = true;
        }
      if (!found) throw bad_option{s + ": unknown variant"};
    } else if (a.key == "--iterations") {
      c.iterations = integer(a, 1, 100'000'000);
    } else if (a.key == "--warmup") {
      c.warmup = integer(a, 0, 1'000'000);
    } else if (a.key == "--threads") {
      c.threads = integer(a, 1, 4096);
    } else if (a.key == "--tasks") {
      c.tasks = integer(a, 1, 1'000'000);
    } else if (a.key == "--dist") {
      const auto d = distribution_from_name(a.value);
      if (!d) throw bad_option{s + ": unknown distribution"};
      c.load.dist = *d;
    } else if (a.key == "--a") {
      c.load.a = real(a, 0, 1e9);
      a_given = true;
    } else if (a.key == "--b") {
      c.load.b = real(a, 0, 1e9);
      b_given = true;
    } else if (a.key == "--unit-us") {
      c.load.unit_us = real(a, 1e-3, 1e9);
    } else if (a.key == "--fraction") {
      c.load.fraction = real(a, 0, 1);
    } else if (s == "--per-rank") {
      c.load.per_rank = true;
    } else if (a.key == "--seed") {
      c.load.seed = static_cast<std::uint64_t>(integer(a, 0, 1L << 62));
    } else if (a.key == "--overlap") {
      if (a.value == "off")
        c.overlap = overlap_mode::off;
      else if (a.value == "sequential")
        c.overlap = overlap_mode::sequential;
      else if (a.value == "parallel")
        c.overlap = overlap_mode::parallel;
      else
        throw bad_option{s + ": expected off, sequential or parallel"};
    } else if (a.key == "--overlap-units") {
      c.overlap_units = real(a, 0, 1e9);
    } else if (a.key == "--overlap-quantum") {
      c.overlap_quantum = real(a, 1e-3, 1e9);
    } else if (a.key == "--lookahead") {
      c.lookahead = integer(a, 0, 1000);
    } else if (s == "--latency") {
      c.latency = true;
    } else if (s == "--calibrate") {
      c.calibrate_only = true;
    } else if (a.key == "--iters-per-us") {
      set_iterations_per_us(real(a, 1e-3, 1e9));
    } else {
      throw bad_option{"unknown option " + s};
    }
  }
  // Defaults that depend on the distribution: every one centred on one quantum.
  if (!a_given && c.load.dist == distribution::scaled) c.load.a = 2;
  if (!b_given && c.load.dist == distribution::gaussian) c.load.b = 0.5;
  if (!b_given && c.load.dist == distribution::uniform) c.load.b = std::max(c.load.a, 1.0);
  if (c.tasks == 0) c.tasks = c.threads;
  if (c.overlap != overlap_mode::off && c.overlap_units == 0)
    throw bad_option{"--overlap=" + std::string(overlap_name(c.overlap)) +
                     " needs --overlap-units=X (> 0)"};
  c.load.tasks_per_rank = static_cast<std::uint32_t>(c.tasks);
  try {
    check(c.load);
  } catch (const std::invalid_argument& e) {
    throw bad_option{std::string("the load: ") + e.what()};
  }
  return c;
}

std::vector<double> overlap_pieces(const config& c) {
  std::vector<double> p;
  if (c.overlap == overlap_mode::off || c.overlap_units <= 0) return p;
  const double total = c.overlap_units * c.load.unit_us;
  if (c.overlap == overlap_mode::sequential) return {total};
  const double piece = c.overlap_quantum * c.load.unit_us;
  double left = total;
  while (left > 1e-9) {
    p.push_back(std::min(piece, left));
    left -= piece;
  }
  return p;
}

void print_result(const config& c, std::uint32_t ranks, double seconds, long errors) {
  const double per_iter_us = seconds / static_cast<double>(c.iterations) * 1e6;
  std::printf(
      "result variant=%s ranks=%u threads=%ld tasks=%ld dist=%s a=%g b=%g unit_us=%g "
      "fraction=%g overlap=%s overlap_units=%g lookahead=%ld latency=%d iterations=%ld "
      "us_per_iter=%.3f errors=%ld\n",
      c.variant_name.c_str(), ranks, c.threads, c.tasks, distribution_name(c.load.dist), c.load.a,
      c.load.b, c.load.unit_us, c.load.fraction, overlap_name(c.overlap), c.overlap_units,
      c.lookahead, c.latency ? 1 : 0, c.iterations, per_iter_us, errors);
  std::fflush(stdout);
}

}  // namespace collectives_bench
