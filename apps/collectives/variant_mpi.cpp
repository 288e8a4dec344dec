// The peers of grain-collectives-bench (Wickramasinghe et al. 2017 §V-B, V-C), same workload and
// draws:
//   omp-static / omp-dynamic  fork-join: parallel for (schedule static / dynamic,1) with a
//                             reduction over A, then MPI_Allreduce, then C (sequential on the
//                             master, or a parallel for over its pieces);
//   omp-tasks                 one task per piece of A and C; the master waits for A's tasks
//                             (taskgroup), calls MPI_Allreduce while the others run C;
//   omp-iallreduce            A as omp-dynamic, then MPI_Iallreduce overlapped with C (the
//                             master tests it between its pieces), then MPI_Wait;
//   mpi                       one thread per rank (run one rank per core): A in order, then
//                             MPI_Iallreduce, C piece by piece with MPI_Test, MPI_Wait (a plain
//                             MPI_Allreduce when C is off).
// MPI_THREAD_FUNNELED: only the master thread calls MPI.
#include "variants.hpp"

#if GRAIN_COLLECTIVES_WITH_MPI

#include <mpi.h>
#include <omp.h>

#include <cstdio>
#include <vector>

namespace collectives_bench {

namespace {

struct run_state {
  int rank = 0, size = 1;
  double expect = 0;
  long errors = 0;
};

double a_value(const config& c, int rank, long t) {
  return task_value(static_cast<std::uint64_t>(rank) * static_cast<std::uint64_t>(c.tasks) +
                    static_cast<std::uint64_t>(t));
}

void a_work(const config& c, std::uint64_t it, int rank, long t) {
  spin_us(units(c.load, it, static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(t)) *
          c.load.unit_us);
}

// C while a non-blocking reduction is in flight, on the master: piece by piece, testing it.
void c_testing(const std::vector<double>& pieces, MPI_Request* req) {
  int done = 0;
  for (double us : pieces) {
    spin_us(us);
    if (!done) MPI_Test(req, &done, MPI_STATUS_IGNORE);
  }
}

void c_parallel_for(const std::vector<double>& pieces) {
  const long n = static_cast<long>(pieces.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (long p = 0; p < n; ++p) spin_us(pieces[static_cast<std::size_t>(p)]);
}

void iteration_forkjoin(const config& c, std::uint64_t it, run_state& s, bool dynamic) {
  double local = 0;
  if (dynamic) {
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : local)
    for (long t = 0; t < c.tasks; ++t) {
      a_work(c, it, s.rank, t);
      local += a_value(c, s.rank, t);
    }
  } else {
#pragma omp parallel for schedule(static) reduction(+ : local)
    for (long t = 0; t < c.tasks; ++t) {
      a_work(c, it, s.rank, t);
      local += a_value(c, s.rank, t);
    }
  }
  double global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const std::vector<double> pieces = overlap_pieces(c);
  if (c.overlap == overlap_mode::parallel)
    c_parallel_for(pieces);
  else
    for (double us : pieces) spin_us(us);
  s.errors += global != s.expect;
}

void iteration_iallreduce(const config& c, std::uint64_t it, run_state& s) {
  double local = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : local)
  for (long t = 0; t < c.tasks; ++t) {
    a_work(c, it, s.rank, t);
    local += a_value(c, s.rank, t);
  }
  double global = 0;
  MPI_Request req;
  MPI_Iallreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
  const std::vector<double> pieces = overlap_pieces(c);
  if (c.overlap == overlap_mode::parallel) {
    // The master tests the reduction between the pieces it takes.
    const long n = static_cast<long>(pieces.size());
    int done = 0;
#pragma omp parallel for schedule(dynamic, 1)
    for (long p = 0; p < n; ++p) {
      spin_us(pieces[static_cast<std::size_t>(p)]);
      if (omp_get_thread_num() == 0 && !done) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    }
  } else {
    c_testing(pieces, &req);
  }
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  s.errors += global != s.expect;
}

void iteration_tasks(const config& c, std::uint64_t it, run_state& s) {
  double local = 0, global = 0;
  const std::vector<double> pieces = overlap_pieces(c);
#pragma omp parallel
#pragma omp single
  {
    for (double us : pieces) {
#pragma omp task firstprivate(us)
      spin_us(us);
    }
#pragma omp taskgroup
    {
      for (long t = 0; t < c.tasks; ++t) {
#pragma omp task firstprivate(t) shared(local)
        {
          a_work(c, it, s.rank, t);
          const double v = a_value(c, s.rank, t);
#pragma omp atomic
          local += v;
        }
      }
    }
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#pragma omp taskwait
  }
  s.errors += global != s.expect;
}

void iteration_mpi_only(const config& c, std::uint64_t it, run_state& s) {
  double local = 0, global = 0;
  for (long t = 0; t < c.tasks; ++t) {
    a_work(c, it, s.rank, t);
    local += a_value(c, s.rank, t);
  }
  if (c.overlap == overlap_mode::off) {
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  } else {
    MPI_Request req;
    MPI_Iallreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    c_testing(overlap_pieces(c), &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  }
  s.errors += global != s.expect;
}

void iteration(const config& c, std::uint64_t it, run_state& s) {
  switch (c.v) {
    case variant::omp_static:
      return iteration_forkjoin(c, it, s, false);
    case variant::omp_dynamic:
      return iteration_forkjoin(c, it, s, true);
    case variant::omp_tasks:
      return iteration_tasks(c, it, s);
    case variant::omp_iallreduce:
      return iteration_iallreduce(c, it, s);
    default:
      return iteration_mpi_only(c, it, s);
  }
}

}  // namespace

int run_mpi(const config& cfg_in, int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  config c = cfg_in;
  run_state s;
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size);
  c.load.ranks = static_cast<std::uint32_t>(s.size);
  if (c.v == variant::mpi) c.threads = 1;
  omp_set_num_threads(static_cast<int>(c.threads));
  s.expect = expected_sum(static_cast<std::uint64_t>(s.size), static_cast<std::uint64_t>(c.tasks));
  double seconds = 0;
  if (c.latency) {
    double one = 1, sum = 0;
    for (long i = 0; i < c.warmup; ++i)
      MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (long i = 0; i < c.iterations; ++i) {
      MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      s.errors += sum != s.size;
    }
    seconds = MPI_Wtime() - t0;
  } else {
    for (long i = 0; i < c.warmup; ++i) iteration(c, static_cast<std::uint64_t>(i), s);
    s.errors = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (long i = c.warmup; i < c.warmup + c.iterations; ++i)
      iteration(c, static_cast<std::uint64_t>(i), s);
    MPI_Barrier(MPI_COMM_WORLD);
    seconds = MPI_Wtime() - t0;
  }
  long errors = 0;
  MPI_Reduce(&s.errors, &errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (s.rank == 0) print_result(c, static_cast<std::uint32_t>(s.size), seconds, errors);
  MPI_Finalize();
  return errors == 0 ? 0 : 1;
}

}  // namespace collectives_bench

#else

#include <cstdio>

namespace collectives_bench {

int run_mpi(const config& c, int, char**) {
  std::fprintf(stderr,
               "grain-collectives-bench: --variant=%s needs MPI and OpenMP; this build has "
               "not both (GRAIN_WITH_MPI=OFF, or no OpenMP for the compiler)\n",
               c.variant_name.c_str());
  return 2;
}

}  // namespace collectives_bench

#endif
