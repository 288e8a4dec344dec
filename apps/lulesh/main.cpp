// grain-lulesh: LULESH 2.0's Sedov blast wave (Karlin et al., LLNL 2013) on grain. The same
// command line and report as the reference; three variants of the same kernels:
//   grain-lulesh -s 30                      the leapfrog as a dataflow of grain tasks
//   grain-lulesh -s 30 --variant=omp --schedule=dynamic    OpenMP parallel loops
//   grain-lulesh -s 30 --variant=serial     one thread
// See docs/lulesh.md.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "grain/grain.hpp"
#include "halo.hpp"
#include "kernels.hpp"
#include "options.hpp"
#include "partitioning.hpp"
#include "report.hpp"
#include "runners.hpp"

namespace {

using namespace lulesh;

std::string describe(const options& o, const run_result& r) {
  std::string s = "grain-lulesh: variant " + std::string(variant_name(o.var));
  if (o.var == variant::omp) s += " (schedule " + std::string(schedule_name(o.schedule)) + ")";
  s += ", " + std::to_string(r.threads) + (o.var == variant::grain ? " workers" : " threads");
  if (o.domains_per_locality > 1)
    s += ", " + std::to_string(o.domains_per_locality) + " domains per locality";
  s += ", partition " + std::to_string(r.partition) + " elements (" + std::to_string(r.partitions) +
       " partitions)";
  if (o.inject)
    s += ", injected " + std::string(load_injection::distribution_name(o.load.dist)) + " load (" +
         std::to_string(load_injection::iterations_per_us()) + " spin iterations per us)";
  return s;
}

int run_without_runtime(const options& o) {
  domain d(o.prob, 0, 0, 0, 0);
  injector inject(o, 0, 1);
  if (!o.quiet) print_banner(o.prob, 1, std::string("Variant: ") + variant_name(o.var));
  const run_result r = run_loops(d, o, inject);
  if (!o.quiet) print_report(d, 1, r.seconds, describe(o, r));
  return 0;
}

// Every locality's part of a --variant=grain run: its domain of the cube, the nodal masses
// summed with its neighbours', then the time loop. Started by locality 0 on all of them.
options g_options;                 // parsed on every locality before the runtime starts
std::unique_ptr<domain> g_domain;  // locality 0's, for the report

struct locality_result {
  double seconds = 0;
  std::int32_t partition = 0, partitions = 0, cycles = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(seconds, partition, partitions, cycles);
  }
};

locality_result run_locality() {
  const options& o = g_options;
  const int rank = static_cast<int>(grain::find_here().rank());
  const int ranks = static_cast<int>(grain::get_num_localities());
  const int k = o.domains_per_locality, domains = ranks * k;
  const index_t side = cube_side(domains);
  problem prob = o.prob;
  prob.side = side;
  struct piece {
    std::unique_ptr<domain> d;
    std::unique_ptr<halo> h;
    std::unique_ptr<injector> inject;
  };
  std::vector<piece> mine(static_cast<std::size_t>(k));
  for (int j = 0; j < k; ++j) {
    const int id = rank * k + j;
    auto& m = mine[static_cast<std::size_t>(j)];
    m.d = std::make_unique<domain>(prob, id % side, id / side % side, id / (side * side), id);
    m.h = std::make_unique<halo>(*m.d, id, domains, k);
    m.inject = std::make_unique<injector>(o, id, domains);
  }
  // The nodal masses of shared nodes: every domain's own sums, then the neighbours' added.
  for (auto& m : mine)
    if (m.h->active()) m.h->send(*m.d, exchange::masses, 0);
  for (auto& m : mine) {
    if (!m.h->active()) continue;
    const auto in = m.h->receive(exchange::masses, 0);
    for (const auto& f : in) f.wait();
    m.h->apply(*m.d, exchange::masses, in);
  }
  grain::knob& partition = grain::knobs().at("lulesh.partition");
  // The workers of this locality's pool (the runtime object lives in locality 0's main only).
  if (partition.int_value() <= 0)
    partition.set(static_cast<double>(default_partition(*mine[0].d, grain::detail::loop_workers())),
                  "the default: 16 partitions per worker", "grain-lulesh");
  grain::collectives::barrier().get();  // the clocks start together, as the reference's
  partition_schedule schedule(partition, default_partition(*mine[0].d, 1), mine.size());
  std::vector<grain::future<run_result>> runs;
  runs.reserve(mine.size());
  for (auto& m : mine)
    runs.push_back(grain::async([&m, &schedule, first = &m == &mine.front()] {
      return run_grain(*m.d, g_options, *m.inject, schedule, first, m.h.get());
    }));
  locality_result out;
  std::exception_ptr error;
  for (auto& f : runs) {
    try {
      const run_result r = f.get();
      out = {std::max(out.seconds, r.seconds), r.partition, r.partitions, 0};
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  out.cycles = mine[0].d->cycle;
  if (rank == 0) g_domain = std::move(mine[0].d);
  return out;
}

int run_with_runtime(int argc, char** argv) {
  const options& o = g_options;
  // Defined before the runtime starts, so that --grain:knob=lulesh.partition=N applies and
  // --grain:list-knobs shows it.
  grain::knobs().define_int(
      "lulesh.partition", 0, std::int64_t{o.prob.size} * o.prob.size * o.prob.size,
      o.partition > 0 ? o.partition : 0,
      "grain-lulesh: elements per partition task (0: automatic); read before every cycle");
  grain::runtime rt(argc, argv);  // under mpirun, returns on locality 0 only
  const int ranks = static_cast<int>(grain::get_num_localities());
  const int domains = ranks * o.domains_per_locality;
  cube_side(domains);  // a clear error before any locality starts
  if (!o.quiet)
    print_banner(o.prob, domains,
                 "Num workers: " + std::to_string(rt.num_workers()) + " on " +
                     std::to_string(ranks) + " localities");
  std::vector<grain::future<locality_result>> parts;
  for (grain::locality l : grain::find_all_localities())
    parts.push_back(grain::async(l, grain::action<&run_locality>{}));
  run_result r;
  for (auto& f : parts) {
    const locality_result x = f.get();
    r.seconds = std::max(r.seconds, x.seconds);  // the slowest locality, as the reference
    if (r.partitions == 0) {
      r.partition = x.partition;
      r.partitions = x.partitions;
    }
  }
  r.threads = rt.num_workers();
  rt.stop();
  if (!o.quiet) print_report(*g_domain, domains, r.seconds, describe(o, r));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    o = parse_options(argc, argv);
  } catch (const bad_option& e) {
    std::fprintf(stderr, "grain-lulesh: %s\n%s", e.message.c_str(), usage().c_str());
    return 2;
  }
  if (o.help) {
    std::printf("%s", usage().c_str());
    return 0;
  }
  try {
    if (o.var == variant::grain) {
      g_options = o;
      return run_with_runtime(argc, argv);
    }
    return run_without_runtime(o);
  } catch (const physics_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grain-lulesh: %s\n", e.what());
    return 1;
  }
}
