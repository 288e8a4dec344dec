// bench-mpi-pingpong: grain-pingpong's two measurements with plain MPI, the reference for
// the parcel layer (scripts/bench-pingpong). Round trip: MPI_Send + MPI_Recv of B bytes and
// back, one at a time. Message rate: rank 0 MPI_Isends N messages of B bytes (at most 64 in
// flight, like grain's transport), rank 1 receives them with MPI_Recv, then answers once.
//   mpirun -np 2 bench-mpi-pingpong [--round-trips=N] [--posts=N] [--bytes=B] [--reps=R]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/app_args.hpp"

namespace {
long arg(int argc, char** argv, const std::string& name, long def) {
  return bench::args::named_integer(argc, argv, "bench-mpi-pingpong", name, def);
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    std::fprintf(stderr, "bench-mpi-pingpong: needs mpirun -np 2\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long trips = arg(argc, argv, "round-trips", 20000);
  const long posts = arg(argc, argv, "posts", 200000);
  const int bytes = static_cast<int>(arg(argc, argv, "bytes", 8));
  const long reps = std::max(1L, arg(argc, argv, "reps", 5));
  std::vector<char> buf(static_cast<std::size_t>(std::max(bytes, 1)), 'x');
  std::vector<MPI_Request> reqs(64, MPI_REQUEST_NULL);
  for (long r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < trips; ++i) {
      if (rank == 0) {
        MPI_Send(buf.data(), bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf.data(), bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf.data(), bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      }
    }
    const double rt_us = (MPI_Wtime() - t0) / static_cast<double>(trips) * 1e6;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (rank == 0) {
      for (long i = 0; i < posts; ++i) {
        MPI_Request& q = reqs[static_cast<std::size_t>(i % 64)];
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        MPI_Isend(buf.data(), bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &q);
      }
      MPI_Waitall(64, reqs.data(), MPI_STATUSES_IGNORE);
      char done = 0;
      MPI_Recv(&done, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      const double rate = static_cast<double>(posts) / (MPI_Wtime() - t0);
      std::printf("{\"system\":\"mpi\",\"bytes\":%d,\"round_trip_us\":%.3f,\"msg_rate\":%.0f}\n",
                  bytes, rt_us, rate);
      std::fflush(stdout);
    } else if (rank == 1) {
      std::vector<char> in(buf.size());
      for (long i = 0; i < posts; ++i)
        MPI_Recv(in.data(), bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      char done = 1;
      MPI_Send(&done, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    }
  }
  MPI_Finalize();
  return 0;
}
