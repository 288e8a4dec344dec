#pragma once
// What the parcel layer needs from a network: ranks, non-blocking sends of whole messages,
// and a progress call that completes sends and hands over received messages. The MPI
// implementation (mpi_transport.hpp) is the only one; without mpirun there is none and the
// program is one locality.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "grain/detail/waiter.hpp"
#include "peer_watch.hpp"

namespace grain::distributed {

enum class message_tag : int { parcels = 1, control = 2 };

class transport {
 public:
  // A received message: its bytes are valid during the call only; `owner`, when not null, is
  // the vector holding them, which the receiver may take (move from) to keep them longer.
  using receiver = std::function<void(std::uint32_t source, message_tag,
                                      std::span<const char> bytes, std::vector<char>* owner)>;
  virtual ~transport() = default;
  virtual std::uint32_t rank() const noexcept = 0;
  virtual std::uint32_t size() const noexcept = 0;
  // Queues the message and starts it when no other thread is in the network; never waits
  // for the network.
  // `parcels`: how many parcels the message carries (for the trace's message records).
  virtual void send(std::uint32_t dest, message_tag tag, std::vector<char> bytes,
                    std::uint32_t parcels = 1) = 0;
  // Starts a small message at once when the network is free and nothing queued is ahead of
  // it, and returns true: `bytes` is then either untouched — MPI has copied them already, so
  // the caller may reuse the vector — or taken (moved from) until the send completes. False,
  // and nothing happened, otherwise (the caller then sends it with send()).
  virtual bool send_reusing(std::uint32_t dest, message_tag tag, std::vector<char>& bytes,
                            std::uint32_t parcels = 1) = 0;
  // Starts queued sends, completes finished ones, receives what has arrived and hands each
  // message to `r` (outside the network lock). Returns true when anything moved. A thread
  // that finds another one progressing returns false at once.
  virtual bool progress(const receiver& r) = 0;
  // Sends queued or in flight.
  virtual std::size_t sends_pending() const noexcept = 0;
  // Completes every send (blocking) and shuts the network down (MPI_Finalize when grain
  // initialised MPI). Collective: every rank calls it.
  virtual void finalize() = 0;
  // This process's runtime failed to start while the other ranks' did not: leave MPI without
  // MPI_Finalize (Open MPI's waits for every rank, so it would wait for ever); the process's
  // exit then makes mpirun end the job. Not collective.
  virtual void abandon() noexcept = 0;
  // The program cannot go on (grain::abort_job): end every rank of the job with `status`
  // (MPI_Abort: mpirun kills the others). Not collective; does not return.
  [[noreturn]] virtual void abort_job(int status) noexcept = 0;
  // Held around every MPI call (MPI_THREAD_SERIALIZED or SINGLE); the process's other MPI users
  // take it too: the trace's collectives (mpi_trace_group.cpp) blocking, grain's collectives
  // (collectives_mpi.cpp) with try_lock.
  virtual detail::spinlock& network_mutex() noexcept = 0;
  // Every rank's process (index = rank), exchanged when the job started: what the peer watch
  // looks at (peer_watch.hpp).
  virtual const std::vector<process_identity>& identities() const noexcept = 0;
  // The largest message tag the network carries (MPI_TAG_UB).
  virtual int max_tag() const noexcept = 0;
  // The MPI thread level in words, for the log and docs.
  virtual const char* description() const noexcept = 0;
};

// How grain asks MPI for threads (--grain:mpi-threads, docs/distributed.md "Progress").
// grain makes every MPI call under its network lock, one thread at a time, so
// MPI_THREAD_SERIALIZED is what it needs. `single` asks for MPI_THREAD_SINGLE instead and
// relies on that lock alone, as HPX's MPI parcelport does with hpx.parcel.mpi.multithreaded=0:
// Open MPI turns its own locks on at any level above SINGLE, and they cost a third of a small
// message's send and receive. `automatic` is `single` with Open MPI, `serialized` otherwise.
enum class mpi_threads { automatic, single, serialized };
// Parses the option's value; throws std::invalid_argument naming the accepted ones.
mpi_threads parse_mpi_threads(const std::string& value);

// The MPI transport when the process was started by mpirun (or MPI is already initialised);
// nullptr otherwise, and in a build without MPI. Throws std::runtime_error when MPI cannot
// give what grain needs (thread level).
std::unique_ptr<transport> make_mpi_transport(mpi_threads threads = mpi_threads::automatic);

}  // namespace grain::distributed
