#pragma once
// What the collectives need from MPI: one non-blocking collective per generation over bytes,
// on a communicator per kind of collective (generations of one kind start in the same order
// on every rank, as MPI requires; kinds do not wait for each other). The MPI implementation
// (collectives_mpi.cpp) takes the transport's lock around every MPI call (the job runs at
// MPI_THREAD_SERIALIZED); without MPI there is none and collectives complete locally.
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "grain/distributed/collectives.hpp"

namespace grain::distributed {

class collective_network {
 public:
  struct finished {
    std::uint64_t id = 0;
    std::string error;  // empty: completed
  };
  virtual ~collective_network() = default;
  // Starts operation `id`: all_reduce, all_gather and barrier as an MPI_Iallgather of `block`
  // bytes per rank, reduce as an MPI_Igather to `root`, broadcast as an MPI_Ibcast of `block`
  // bytes from `root`. `send` and `recv` stay untouched by the caller until the operation
  // finished. False when another thread is in MPI (try again later); throws
  // std::runtime_error when MPI refuses to start it.
  virtual bool start(std::uint64_t id, detail::collective_kind kind, std::uint32_t root,
                     std::span<const char> send, std::span<char> recv) = 0;
  // Tests the operations in flight; appends those that finished. False when another thread is
  // in MPI.
  virtual bool poll(std::vector<finished>& out) = 0;
  virtual std::size_t in_flight() const noexcept = 0;
  // Frees the communicators (operations still in flight are left to MPI).
  virtual void close() = 0;
};

// Duplicates MPI_COMM_WORLD once per kind (collective: every rank calls it at start-up).
// `network` is the transport's lock (transport::network_mutex).
std::unique_ptr<collective_network> make_mpi_collective_network(std::mutex& network);

}  // namespace grain::distributed
