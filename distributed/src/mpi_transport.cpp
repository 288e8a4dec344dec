// The MPI transport's setup, shutdown and failure handling (mpi_transport.hpp): MPI's
// initialisation at the thread level grain needs, the communicators, the ranks' identities
// and the ring of receives; finalisation once every send is done; leaving MPI when this rank
// failed to start, and ending the whole job. Also what exists without MPI: the thread-level
// option's parser and, in a build without MPI, a transport that is never there.
#include "transport.hpp"

#include <stdexcept>
#include <string>

#if GRAIN_WITH_MPI

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "grain/distributed/action.hpp"
#include "mpi_transport.hpp"

namespace grain::distributed {

namespace {

bool started_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string(what) + ": " + mpi_error(rc));
}

}  // namespace

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

mpi_transport::mpi_transport(mpi_threads threads) {
#if defined(OMPI_MAJOR_VERSION)
  if (threads == mpi_threads::automatic) threads = mpi_threads::single;
#endif
  const int wanted = threads == mpi_threads::single ? MPI_THREAD_SINGLE : MPI_THREAD_SERIALIZED;
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (!initialized) {
    check(MPI_Init_thread(nullptr, nullptr, wanted, &provided), "MPI_Init_thread");
    owns_mpi_ = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < wanted)
    throw std::runtime_error(
        "grain needs MPI_THREAD_SERIALIZED or more (its workers take turns in MPI); this MPI "
        "was initialised with a lower level — call MPI_Init_thread with "
        "MPI_THREAD_SERIALIZED, leave MPI's initialisation to grain, or run with "
        "--grain:mpi-threads=single (grain's own lock then serialises every MPI call)");
  level_ = provided >= MPI_THREAD_MULTIPLE     ? "MPI_THREAD_MULTIPLE (used as SERIALIZED)"
           : provided >= MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
           : provided >= MPI_THREAD_FUNNELED
               ? "MPI_THREAD_FUNNELED (calls serialised by grain's lock)"
               : "MPI_THREAD_SINGLE (calls serialised by grain's lock)";
  check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
  // Errors come back as codes and are reported with grain's context.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  int r = 0, n = 0;
  MPI_Comm_rank(comm_, &r);
  MPI_Comm_size(comm_, &n);
  rank_ = static_cast<std::uint32_t>(r);
  size_ = static_cast<std::uint32_t>(n);
  // Collective, like MPI_Comm_dup above: every rank starts its runtime.
  process_identity me = this_process();
  me.actions = detail::freeze_wire_indices();
  identities_.resize(size_);
  check(MPI_Allgather(&me, sizeof me, MPI_BYTE, identities_.data(), sizeof me, MPI_BYTE, comm_),
        "MPI_Allgather of the ranks' processes");
  int* tag_ub = nullptr;
  int has_tag_ub = 0;
  MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_ub, &has_tag_ub);
  max_tag_ = has_tag_ub && tag_ub ? *tag_ub : 32767;  // the least MPI guarantees
  check(MPI_Comm_dup(comm_, &large_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(large_, MPI_ERRORS_RETURN);
  slots_.resize(ring_slots);
  ring_requests_.assign(ring_slots, MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < ring_slots; ++i) {
    slots_[i] = std::make_unique<char[]>(small_bytes);
    post_slot(static_cast<int>(i));
  }
}

mpi_transport::~mpi_transport() {
  try {
    finalize();
  } catch (...) {
  }
}

void mpi_transport::abandon() noexcept {
  std::lock_guard net(network_);
  finalized_ = true;
}

void mpi_transport::abort_job(int status) noexcept {
  // Another thread's MPI call ends soon (grain makes no blocking call but the trace's
  // collectives, and those could be what waits for the rank that went away): wait a
  // moment for the lock, then abort regardless — MPI_Abort must not wait for ever either.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!network_.try_lock() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::yield();
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);  // (MPI_Abort does not return; should it, the process still ends)
}

void mpi_transport::finalize() {
  std::lock_guard net(network_);
  if (finalized_) return;
  for (;;) {
    start_sends();
    for (auto& s : in_flight_) {
      MPI_Wait(&s.notice_request, MPI_STATUS_IGNORE);
      MPI_Wait(&s.request, MPI_STATUS_IGNORE);
    }
    in_flight_.clear();
    std::lock_guard lock(outbox_mutex_);
    if (outbox_.empty()) break;
  }
  // Large messages whose notice arrived must complete before the communicators go; the
  // ring's receives are cancelled (every rank has ended its program: nothing more comes).
  for (auto& r : inbox_)
    if (r.request != MPI_REQUEST_NULL) MPI_Wait(&r.request, MPI_STATUS_IGNORE);
  inbox_.clear();
  for (int i : posted_) {
    MPI_Cancel(&ring_requests_[static_cast<std::size_t>(i)]);
    MPI_Wait(&ring_requests_[static_cast<std::size_t>(i)], MPI_STATUS_IGNORE);
  }
  posted_.clear();
  MPI_Comm_free(&large_);
  MPI_Comm_free(&comm_);
  finalized_ = true;
  if (owns_mpi_) {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
  }
}

std::unique_ptr<transport> make_mpi_transport(mpi_threads threads) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && !started_by_mpirun()) return nullptr;
  return std::make_unique<mpi_transport>(threads);
}

}  // namespace grain::distributed

#else

namespace grain::distributed {
std::unique_ptr<transport> make_mpi_transport(mpi_threads) {
  return nullptr;
}
}  // namespace grain::distributed

#endif

namespace grain::distributed {

mpi_threads parse_mpi_threads(const std::string& value) {
  if (value == "auto") return mpi_threads::automatic;
  if (value == "single") return mpi_threads::single;
  if (value == "serialized") return mpi_threads::serialized;
  throw std::invalid_argument("--grain:mpi-threads=" + value +
                              ": expected auto, single or serialized");
}

}  // namespace grain::distributed
