#pragma once
// The trace group of an MPI job (mpi_trace_group.cpp).
#include <memory>
#include <mutex>

#include "grain/detail/waiter.hpp"
#include "grain/instrumentation/trace_group.hpp"

namespace grain::distributed {

// Collective (duplicates MPI_COMM_WORLD): every rank calls it at the same point. `network` is
// the transport's lock, taken around each MPI call. Null in a build without MPI.
std::unique_ptr<instrumentation::trace_group> make_mpi_trace_group(detail::spinlock& network);

}  // namespace grain::distributed
