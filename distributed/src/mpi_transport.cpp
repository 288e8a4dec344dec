// The MPI transport (transport.hpp). Thread level MPI_THREAD_SERIALIZED: any thread may send
// or progress, but only one at a time, under `network_` — a try_lock, so a worker never
// waits for another one's MPI call (seed 001 §3.2: progress is background work, not a
// thread of its own). Receives use MPI_Improbe + MPI_Imrecv, so messages of any size arrive
// without a fixed buffer and without a blocking call. Everything runs on a duplicate of
// MPI_COMM_WORLD, so the application's own MPI traffic cannot match grain's messages.
#include "transport.hpp"

#if GRAIN_WITH_MPI

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>

#include "grain/instrumentation/trace_group.hpp"

namespace grain::distributed {

namespace {

bool started_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string(what) + ": " + mpi_error(rc));
}

class mpi_transport final : public transport {
 public:
  mpi_transport() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = 0;
    if (!initialized) {
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
      owns_mpi_ = true;
    } else {
      MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_SERIALIZED)
      throw std::runtime_error(
          "grain needs MPI_THREAD_SERIALIZED or more (its workers take turns in MPI); this MPI "
          "was initialised with a lower level — call MPI_Init_thread with "
          "MPI_THREAD_SERIALIZED, or leave MPI's initialisation to grain");
    level_ = provided >= MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE (used as SERIALIZED)"
                                             : "MPI_THREAD_SERIALIZED";
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    // Errors come back as codes and are reported with grain's context.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    int r = 0, n = 0;
    MPI_Comm_rank(comm_, &r);
    MPI_Comm_size(comm_, &n);
    rank_ = static_cast<std::uint32_t>(r);
    size_ = static_cast<std::uint32_t>(n);
    // Collective, like MPI_Comm_dup above: every rank starts its runtime.
    const process_identity me = this_process();
    identities_.resize(size_);
    check(MPI_Allgather(&me, sizeof me, MPI_BYTE, identities_.data(), sizeof me, MPI_BYTE, comm_),
          "MPI_Allgather of the ranks' processes");
  }

  ~mpi_transport() override {
    try {
      finalize();
    } catch (...) {
    }
  }

  std::uint32_t rank() const noexcept override { return rank_; }
  std::uint32_t size() const noexcept override { return size_; }
  const char* description() const noexcept override { return level_; }
  const std::vector<process_identity>& identities() const noexcept override { return identities_; }
  std::mutex& network_mutex() noexcept override { return network_; }

  void send(std::uint32_t dest, message_tag tag, std::vector<char> bytes,
            std::uint32_t parcels) override {
    pending_.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard lock(outbox_mutex_);
      outbox_.push_back({dest, tag, std::move(bytes), MPI_REQUEST_NULL, parcels});
    }
    // Start it now when the network is free: a call's latency should not wait for the next
    // progress round.
    std::unique_lock net(network_, std::try_to_lock);
    if (net.owns_lock()) start_sends();
  }

  bool progress(const receiver& deliver) override {
    std::unique_lock net(network_, std::try_to_lock);
    if (!net.owns_lock() || finalized_) return false;
    bool moved = start_sends();
    moved = complete_sends() || moved;
    moved = receive() || moved;
    std::vector<message> got;
    got.swap(arrived_);
    net.unlock();
    // Outside the lock: handling a message may send (a result), and other workers may
    // progress meanwhile.
    for (auto& m : got) deliver(m.source, m.tag, std::move(m.bytes));
    return moved;
  }

  std::size_t sends_pending() const noexcept override {
    return pending_.load(std::memory_order_relaxed);
  }

  void abandon() noexcept override {
    std::lock_guard net(network_);
    finalized_ = true;
  }

  void finalize() override {
    std::lock_guard net(network_);
    if (finalized_) return;
    for (;;) {
      start_sends();
      for (auto& s : in_flight_) MPI_Wait(&s.request, MPI_STATUS_IGNORE);
      in_flight_.clear();
      std::lock_guard lock(outbox_mutex_);
      if (outbox_.empty()) break;
    }
    // Receives that were matched must complete before the communicator goes.
    for (auto& r : receiving_) MPI_Wait(&r.request, MPI_STATUS_IGNORE);
    receiving_.clear();
    MPI_Comm_free(&comm_);
    finalized_ = true;
    if (owns_mpi_) {
      int done = 0;
      MPI_Finalized(&done);
      if (!done) MPI_Finalize();
    }
  }

 private:
  struct message {
    std::uint32_t source;  // or destination
    message_tag tag;
    std::vector<char> bytes;
    MPI_Request request;
    std::uint32_t parcels = 1;
  };

  // With network_ held. At most max_in_flight sends are started: beyond that Open MPI's ob1
  // queues them itself and walks its queue in every progress call (200,000 small calls in
  // flight took 150 µs each instead of a few).
  bool start_sends() {
    // batch_ is reused: a std::deque allocates even when empty, and this runs in every
    // progress round of every idle worker.
    batch_.clear();
    {
      std::lock_guard lock(outbox_mutex_);
      if (outbox_.empty() || in_flight_.size() >= max_in_flight) return false;
      const std::size_t n = std::min(outbox_.size(), max_in_flight - in_flight_.size());
      for (std::size_t i = 0; i < n; ++i) {
        batch_.push_back(std::move(outbox_.front()));
        outbox_.pop_front();
      }
    }
    for (auto& m : batch_) {
      int rc = MPI_Isend(m.bytes.data(), static_cast<int>(m.bytes.size()), MPI_BYTE,
                         static_cast<int>(m.source), static_cast<int>(m.tag), comm_, &m.request);
      if (rc != MPI_SUCCESS)
        throw std::runtime_error("grain: MPI_Isend to rank " + std::to_string(m.source) +
                                 " failed: " + mpi_error(rc));
      // In the order MPI matches them (non-overtaking per destination): the trace pairs its
      // send and receive records in that order.
      instrumentation::trace_message_sent(m.source, static_cast<std::uint32_t>(m.tag),
                                          m.bytes.size(), m.parcels);
      in_flight_.push_back(std::move(m));
    }
    return true;
  }

  // Oldest first, stopping at the first one still in flight: sends complete mostly in order,
  // and testing every one of 100,000 queued sends in every round made a flood quadratic.
  bool complete_sends() {
    bool moved = false;
    while (!in_flight_.empty()) {
      int done = 0;
      int rc = MPI_Test(&in_flight_.front().request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS)
        throw std::runtime_error("grain: a send to rank " +
                                 std::to_string(in_flight_.front().source) +
                                 " failed: " + mpi_error(rc));
      if (!done) break;
      in_flight_.pop_front();
      pending_.fetch_sub(1, std::memory_order_relaxed);
      moved = true;
    }
    return moved;
  }

  bool receive() {
    bool moved = false;
    // Match what has arrived (a bounded number per round: a flood must not starve the sends).
    for (int k = 0; k < 64; ++k) {
      int flag = 0;
      MPI_Message msg;
      MPI_Status st;
      int rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, &msg, &st);
      if (rc != MPI_SUCCESS)
        throw std::runtime_error("grain: MPI_Improbe failed: " + mpi_error(rc));
      if (!flag) break;
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      message m{static_cast<std::uint32_t>(st.MPI_SOURCE), static_cast<message_tag>(st.MPI_TAG),
                std::vector<char>(static_cast<std::size_t>(count)), MPI_REQUEST_NULL};
      rc = MPI_Imrecv(m.bytes.data(), count, MPI_BYTE, &msg, &m.request);
      if (rc != MPI_SUCCESS)
        throw std::runtime_error("grain: receiving from rank " + std::to_string(m.source) +
                                 " failed: " + mpi_error(rc));
      instrumentation::trace_message_received(m.source, static_cast<std::uint32_t>(m.tag),
                                              m.bytes.size());
      receiving_.push_back(std::move(m));
      moved = true;
    }
    for (std::size_t i = 0; i < receiving_.size();) {
      int done = 0;
      MPI_Test(&receiving_[i].request, &done, MPI_STATUS_IGNORE);
      if (done) {
        arrived_.push_back(std::move(receiving_[i]));
        receiving_[i] = std::move(receiving_.back());
        receiving_.pop_back();
        moved = true;
      } else {
        ++i;
      }
    }
    return moved;
  }

  static constexpr std::size_t max_in_flight = 64;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owns_mpi_ = false;
  bool finalized_ = false;
  const char* level_ = "";
  std::uint32_t rank_ = 0, size_ = 1;
  std::mutex network_;
  std::mutex outbox_mutex_;
  std::deque<message> outbox_;
  std::deque<message> in_flight_;
  std::vector<message> receiving_;
  std::vector<message> arrived_;  // complete, handed over after the lock is released
  std::vector<message> batch_;    // start_sends' sends taken from the outbox, under network_
  std::atomic<std::size_t> pending_{0};
  std::vector<process_identity> identities_;
};

}  // namespace

std::unique_ptr<transport> make_mpi_transport() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && !started_by_mpirun()) return nullptr;
  return std::make_unique<mpi_transport>();
}

}  // namespace grain::distributed

#else

namespace grain::distributed {
std::unique_ptr<transport> make_mpi_transport() {
  return nullptr;
}
}  // namespace grain::distributed

#endif
