// grain-stencil: the 1-D heat-diffusion ring of Grubel et al. 2015 (HPX's 1d_stencil_4), futurized
// with dataflow, with the partition size as a knob (stencil.nx) that policies may change while it
// runs. See docs/experiments.md.
//   grain-stencil --nx=1000 --np=10000 --nt=50 --verify --grain:threads=2
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "distributed_ring.hpp"
#include "grain/grain.hpp"
#include "options.hpp"
#include "serial.hpp"
#include "solver.hpp"

namespace {

using stencil::options;
using stencil::run_result;

double ms(std::uint64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

void print_run(int index, const options& o, const run_result& r, unsigned workers) {
  const double seconds = static_cast<double>(r.end_ns - r.start_ns) / 1e9;
  std::vector<std::uint64_t> d;
  for (const auto& s : r.steps) d.push_back(s->duration_ns());
  std::printf("run %d: %.6f s, %zu steps on %u workers, %zu points, final nx %zu (%zu partitions)",
              index, seconds, o.nt, workers, o.total(), r.final_layout.nx, r.final_layout.count());
  if (!d.empty()) {
    std::sort(d.begin(), d.end());
    std::printf("; step time min %.3f ms, median %.3f ms, max %.3f ms", ms(d.front()),
                ms(d[d.size() / 2]), ms(d.back()));
  }
  std::printf("\n");
  if (r.splits != 0)
    std::printf("  %zu partitions split while they ran (stencil.nx moved finer mid-step)\n",
                r.splits);
  // Where the partition size changed (the knob was read at a step boundary).
  for (std::size_t t = 1; t < r.steps.size(); ++t)
    if (r.steps[t]->nx() != r.steps[t - 1]->nx())
      std::printf("  nx %zu -> %zu before step %zu\n", r.steps[t - 1]->nx(), r.steps[t]->nx(), t);
  if (o.print_steps)
    for (const auto& s : r.steps)
      std::printf("  step %zu: %.3f ms, nx %zu, %zu partitions\n", s->step(), ms(s->duration_ns()),
                  s->nx(), s->partitions());
}

// The final values as one array, in ring order.
std::vector<double> gather(const run_result& r) {
  std::vector<double> u;
  u.reserve(r.final_layout.total);
  for (const auto& p : r.solution) {
    const auto& d = p.get();
    u.insert(u.end(), d.data(), d.data() + d.size());
  }
  return u;
}

int verify(const options& o, const std::vector<double>& u) {
  const std::vector<double> ref = stencil::serial_solution(o.total(), o.nt, o.params);
  if (u.size() != ref.size()) {
    std::printf("verify: FAILED: %zu points computed, %zu expected\n", u.size(), ref.size());
    return 1;
  }
  double max_error = 0;
  std::size_t worst = 0;
  for (std::size_t g = 0; g < u.size(); ++g) {
    const double e = std::fabs(u[g] - ref[g]);
    if (e > max_error || std::isnan(e)) {
      max_error = std::isnan(e) ? INFINITY : e;
      worst = g;
    }
  }
  // The parallel and the serial code evaluate the same expression for every point, so any
  // difference is a bug (a wrong neighbour, a lost partition), not rounding.
  if (max_error != 0) {
    std::printf(
        "verify: FAILED: max |error| %.17g at point %zu (got %.17g, serial %.17g), %zu points, "
        "%zu steps\n",
        max_error, worst, u[worst], ref[worst], u.size(), o.nt);
    return 1;
  }
  std::printf("verify: OK: max |error| 0 over %zu points after %zu steps\n", u.size(), o.nt);
  return 0;
}

void print_results(const run_result& r, const std::vector<double>& u) {
  for (std::size_t i = 0; i < r.final_layout.count(); ++i) {
    std::printf("U[%zu] = {", i);
    for (std::size_t g = r.final_layout.begin(i); g < r.final_layout.end(i); ++g)
      std::printf(g == r.final_layout.begin(i) ? "%g" : ", %g", u[g]);
    std::printf("}\n");
  }
}

// --localities: the ring spread over every locality (distributed_ring.hpp).
int run_on_localities(const options& o, grain::runtime& rt) {
  const unsigned ranks = grain::get_num_localities();
  std::printf("grain-stencil: %zu points, %zu steps, %u localities x %u workers\n", o.total(), o.nt,
              ranks, rt.num_workers());
  stencil::distributed_result last;
  std::vector<double> seconds;
  try {
    for (int i = 0; i < o.repeat; ++i) {
      last =
          grain::async([&o] { return stencil::run_distributed(o, o.verify || o.results); }).get();
      seconds.push_back(last.seconds);
      std::printf("run %d: %.6f s, %zu steps on %u localities x %u workers, %zu points;", i + 1,
                  last.seconds, o.nt, ranks, rt.num_workers(), o.total());
      for (unsigned r = 0; r < ranks; ++r)
        std::printf(" locality#%u nx %llu -> %llu", r,
                    static_cast<unsigned long long>(last.first_nx[r]),
                    static_cast<unsigned long long>(last.final_nx[r]));
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    return grain::fatal_error("grain-stencil", e);  // several ranks: every rank ends now
  }
  std::printf("OS_Threads,Execution_Time_sec,Grid_Points,Iterations\n");
  for (double s : seconds)
    std::printf("%u,%.6f,%zu,%zu\n", ranks * rt.num_workers(), s, o.total(), o.nt);
  if (seconds.size() > 1) {
    std::sort(seconds.begin(), seconds.end());
    const std::size_t n = seconds.size();
    std::printf("median of %zu runs: %.6f s\n", n, (seconds[(n - 1) / 2] + seconds[n / 2]) / 2);
  }
  rt.stop();
  return o.verify ? verify(o, last.u) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    o = stencil::parse_options(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "grain-stencil: %s\n%s", e.what(), stencil::usage().c_str());
    return 2;
  }
  if (o.help) {
    std::printf("%s", stencil::usage().c_str());
    return 0;
  }
  // Defined before the runtime starts, so that --grain:knob=stencil.nx=N applies to it and
  // --grain:list-knobs shows it.
  grain::knob* nx_knob = nullptr;
  try {
    nx_knob = &grain::knobs().define_int(
        "stencil.nx", 1, static_cast<std::int64_t>(o.total()), static_cast<std::int64_t>(o.nx),
        "grain-stencil: points per partition; re-partitions between time steps");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grain-stencil: %s\n", e.what());
    return 2;
  }
  const auto iteration_time = grain::counters::define(
      "/app/iteration-time", "grain-stencil: duration of the last time step", "ns");

  grain::runtime rt(argc, argv);  // under mpirun, returns on rank 0 only
  if (o.localities) return run_on_localities(o, rt);
  // The knob may have been set on the command line (--grain:knob=stencil.nx=N): it wins.
  const auto initial_nx = static_cast<std::size_t>(nx_knob->int_value());
  stencil::solver solver(o, *nx_knob, initial_nx, rt.num_workers(), iteration_time);

  std::printf("grain-stencil: %zu points, %zu steps, nx %zu (%zu partitions), %u workers\n",
              o.total(), o.nt, initial_nx, stencil::layout{o.total(), initial_nx}.count(),
              rt.num_workers());
  run_result last;
  std::vector<double> seconds;
  try {
    for (int i = 0; i < o.repeat; ++i) {
      if (i > 0 && static_cast<std::size_t>(nx_knob->int_value()) != initial_nx)
        nx_knob->set(static_cast<double>(initial_nx), "a new run starts from the initial nx",
                     "stencil");
      // Counters (and the summary, taken when the runtime stops) cover the last run only.
      grain::counters::reset();
      last = grain::async([&solver] { return solver.run(); }).get();
      seconds.push_back(static_cast<double>(last.end_ns - last.start_ns) / 1e9);
      print_run(i + 1, o, last, rt.num_workers());
    }
  } catch (const std::exception& e) {
    return grain::fatal_error("grain-stencil", e);  // several ranks: every rank ends now
  }
  // HPX's 1d_stencil_4 result line, one per run.
  std::printf("OS_Threads,Execution_Time_sec,Grid_Points,Iterations\n");
  for (double s : seconds) std::printf("%u,%.6f,%zu,%zu\n", rt.num_workers(), s, o.total(), o.nt);
  if (seconds.size() > 1) {
    std::vector<double> sorted = seconds;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    std::printf("median of %zu runs: %.6f s\n", n, (sorted[(n - 1) / 2] + sorted[n / 2]) / 2);
  }

  std::vector<double> u;
  if (o.verify || o.results) u = gather(last);
  // Futures and promises come from the runtime's memory pools: drop them while it runs.
  last.solution.clear();
  last.steps.clear();
  rt.stop();  // counters and summary end here, before the serial check
  int status = 0;
  if (o.results) print_results(last, u);
  if (o.verify) status = verify(o, u);
  return status;
}
