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

#include "grain/detail/waiter.hpp"

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

// Whether a generation goes as a direct exchange of blocks (MPI_Isend/MPI_Irecv between the
// ranks that need them) instead of MPI's non-blocking collective: small blocks on few ranks,
// where the exchange's messages are fewer than libnbc's rounds cost. all_gather keeps the
// collective: its block depends on the number of local contributors, which a wrong program may
// give differently on each rank, and every rank must choose the same path.
inline constexpr std::size_t direct_exchange_max_block = 1024;  // bytes, header included
inline constexpr std::uint32_t direct_exchange_max_ranks = 16;
constexpr bool uses_direct_exchange(detail::collective_kind kind, std::size_t block,
                                    std::uint32_t ranks) noexcept {
  return kind != detail::collective_kind::all_gather && block <= direct_exchange_max_block &&
         ranks <= direct_exchange_max_ranks;
}

// Duplicates MPI_COMM_WORLD once per kind (collective: every rank calls it at start-up).
// `network` is the transport's lock (transport::network_mutex).
std::unique_ptr<collective_network> make_mpi_collective_network(detail::spinlock& network);

}  // namespace grain::distributed
