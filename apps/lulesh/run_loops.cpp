// --variant=serial and --variant=omp: each phase of the step is one loop over the partitions
// (OpenMP `parallel for` with the schedule of --schedule), and every loop ends in a barrier:
// the fork-join structure of the reference's MPI+OpenMP version.
#include <chrono>
#include <exception>
#include <vector>

#include "kernels.hpp"
#include "partitioning.hpp"
#include "report.hpp"
#include "runners.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace lulesh {

namespace {

// Runs body(i) for i in [0, n): in parallel for the omp variant. An exception (a physics
// error) cannot leave an OpenMP loop: the first one is kept and thrown after it.
template <class F>
void for_each_partition(bool parallel, index_t n, F&& body) {
  std::exception_ptr error;
  if (!parallel) {
    for (index_t i = 0; i < n; ++i) body(i);
    return;
  }
#if defined(_OPENMP)
#pragma omp parallel for schedule(runtime)
  for (index_t i = 0; i < n; ++i) {
    try {
      body(i);
    } catch (...) {
#pragma omp critical(lulesh_error)
      if (!error) error = std::current_exception();
    }
  }
#endif
  if (error) std::rethrow_exception(error);
}

}  // namespace

run_result run_loops(domain& d, const options& o, injector& inject) {
  const bool parallel = o.var == variant::omp;
  run_result r;
#if defined(_OPENMP)
  if (parallel) {
    if (o.threads > 0) omp_set_num_threads(o.threads);
    const omp_sched_t kinds[] = {omp_sched_static, omp_sched_dynamic, omp_sched_guided};
    omp_set_schedule(kinds[static_cast<int>(o.schedule)], 0);
    r.threads = static_cast<unsigned>(omp_get_max_threads());
  }
#else
  if (parallel) throw std::runtime_error("grain-lulesh was built without OpenMP: no --variant=omp");
#endif
  const partitioning parts(d, o.partition > 0 ? o.partition : default_partition(d, r.threads));
  inject.set_partitions(parts.count());
  std::vector<dt_bounds> bounds(static_cast<std::size_t>(parts.count()));
  dt_bounds mesh;
  const auto t0 = std::chrono::steady_clock::now();
  while (d.time < d.k.stoptime && d.cycle < o.iterations) {
    advance_time(d, mesh);
    const real dt = d.deltatime;
    const index_t cycle = d.cycle;
    for_each_partition(parallel, parts.count(), [&](index_t p) {
      inject(loop::stress, loop::hourglass, cycle, p);
      element_forces(d, parts.elements(p).begin, parts.elements(p).end);
    });
    for_each_partition(parallel, parts.count(), [&](index_t q) {
      gather_node_forces(d, parts.nodes(q).begin, parts.nodes(q).end);
      advance_nodes(d, parts.nodes(q).begin, parts.nodes(q).end, dt);
    });
    for_each_partition(parallel, parts.count(), [&](index_t p) {
      inject(loop::kinematics, loop::q_gradients, cycle, p);
      element_kinematics(d, parts.elements(p).begin, parts.elements(p).end, dt);
    });
    for_each_partition(parallel, parts.count(), [&](index_t p) {
      inject(loop::monotonic_q, loop::eos, cycle, p);
      bounds[p] = element_material(d, parts.elements(p).begin, parts.elements(p).end);
    });
    mesh = dt_bounds{};
    for (const dt_bounds& b : bounds) mesh = combine(mesh, b);
    if (o.progress && !o.quiet) print_progress(d);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.partition = parts.chunk();
  r.partitions = parts.count();
  return r;
}

}  // namespace lulesh
