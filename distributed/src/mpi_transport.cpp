// The MPI transport (transport.hpp). Thread level MPI_THREAD_SERIALIZED, or SINGLE
// (transport.hpp, mpi_threads): any thread may send or progress, but only one at a time,
// under `network_` — a try_lock, so a worker never
// waits for another one's MPI call (Wagle 2019 §3.2: progress is background work, not a
// thread of its own). Small messages (≤ 8 KiB) land in a ring of receives posted in advance
// (no probe, no allocation per message); a larger one is announced there by a notice in its
// place and its bytes follow on a second communicator, so every message is handed over in
// the order MPI matched it. Everything runs on duplicates of MPI_COMM_WORLD, so the
// application's own MPI traffic cannot match grain's messages.
#include "transport.hpp"

#include <stdexcept>
#include <string>

#if GRAIN_WITH_MPI

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "grain/distributed/action.hpp"
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
  explicit mpi_transport(mpi_threads threads) {
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

  ~mpi_transport() override {
    try {
      finalize();
    } catch (...) {
    }
  }

  std::uint32_t rank() const noexcept override {
    return rank_;
  }
  std::uint32_t size() const noexcept override {
    return size_;
  }
  const char* description() const noexcept override {
    return level_;
  }
  int max_tag() const noexcept override {
    return max_tag_;
  }
  const std::vector<process_identity>& identities() const noexcept override {
    return identities_;
  }
  detail::spinlock& network_mutex() noexcept override {
    return network_;
  }

  void send(std::uint32_t dest, message_tag tag, std::vector<char> bytes,
            std::uint32_t parcels) override {
    pending_.fetch_add(1, std::memory_order_relaxed);
    // Started now when the network is free: a call's latency should not wait for the next
    // progress round. Finished sends are retired first: a sender posting in a loop would
    // otherwise stop at max_in_flight until the next round (up to 100 µs on a busy worker).
    std::unique_lock net(network_, std::try_to_lock);
    if (net.owns_lock() && !finalized_) {
      complete_sends();
      // Nothing queued ahead of it (this thread's earlier sends included): straight to MPI.
      if (queued_.load(std::memory_order_acquire) == 0 && in_flight_.size() < max_in_flight) {
        in_flight_.push_back({dest, tag, std::move(bytes), parcels});
        start(in_flight_.back());
        return;
      }
    }
    {
      std::lock_guard lock(outbox_mutex_);
      outbox_.push_back({dest, tag, std::move(bytes), parcels});
      queued_.fetch_add(1, std::memory_order_release);
    }
    if (net.owns_lock() && !finalized_) start_sends();
  }

  // An MPI_Isend tested at once: a small message that MPI could hand to the peer on the spot
  // (Open MPI's ob1 "send inline": the usual case) completes right there, and its request is
  // complete without a progress call, so there is nothing to keep, test or free later and the
  // caller reuses its buffer. Otherwise the buffer goes in flight with the request, as a queued
  // send's would. (A blocking MPI_Send would avoid even the test, but when the receiver is
  // busy it waits for it while holding the network lock: a two-way flood of small posts took
  // 1.6x as long.)
  bool send_reusing(std::uint32_t dest, message_tag tag, std::vector<char>& bytes,
                    std::uint32_t parcels) override {
    if (bytes.size() > small_bytes) return false;
    std::unique_lock net(network_, std::try_to_lock);
    if (!net.owns_lock() || finalized_ || queued_.load(std::memory_order_acquire) != 0 ||
        in_flight_.size() >= max_in_flight)
      return false;
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE,
                       static_cast<int>(dest), static_cast<int>(tag), comm_, &request);
    if (rc != MPI_SUCCESS)
      throw std::runtime_error("grain: MPI_Isend to rank " + std::to_string(dest) +
                               " failed: " + mpi_error(rc));
    instrumentation::trace_message_sent(dest, static_cast<std::uint32_t>(tag), bytes.size(),
                                        parcels);
    int done = 0;
    rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
      throw std::runtime_error("grain: a send to rank " + std::to_string(dest) +
                               " failed: " + mpi_error(rc));
    if (!done) {
      pending_.fetch_add(1, std::memory_order_relaxed);
      in_flight_.push_back({dest, tag, std::move(bytes), parcels, request});
    }
    return true;
  }

  bool progress(const receiver& deliver) override {
    std::unique_lock net(network_, std::try_to_lock);
    if (!net.owns_lock() || finalized_) return false;
    repost_released();
    bool moved = start_sends();
    moved = complete_sends() || moved;
    moved = receive() || moved;
    // One thread at a time hands messages over, oldest first: a direct action sees the
    // messages of a sender in the order they were sent even when several threads progress
    // (the workers, and a waiting main thread). Another thread finding it busy leaves what it
    // received in arrived_ for the next round.
    // Every thread that sets the flag holds the network lock: a load and a store suffice.
    if (arrived_.empty() || delivering_.load(std::memory_order_acquire)) return moved;
    delivering_.store(true, std::memory_order_relaxed);
    struct done_delivering {
      std::atomic<bool>& flag;
      ~done_delivering() { flag.store(false, std::memory_order_release); }
    } reset{delivering_};
    handing_.swap(arrived_);
    net.unlock();
    // Outside the lock: handling a message may send (a result), and other workers may
    // progress meanwhile. The ring slots stay out of MPI's hands until handled.
    for (auto& m : handing_) {
      if (m.slot >= 0)
        deliver(m.source, m.tag, {slots_[static_cast<std::size_t>(m.slot)].get(), m.bytes},
                nullptr);
      else
        deliver(m.source, m.tag, m.big, &m.big);
    }
    std::uint64_t released = 0;
    for (auto& m : handing_)
      if (m.slot >= 0) released |= std::uint64_t{1} << m.slot;
    handing_.clear();
    if (released) {
      // Back to MPI at once when the network is free (one locked instruction where handing
      // them to the next round took two), else in the next round.
      std::unique_lock again(network_, std::try_to_lock);
      if (again.owns_lock() && !finalized_) {
        repost_released();
        post_slots(released);
      } else {
        released_.fetch_or(released, std::memory_order_release);
      }
    }
    return true;
  }

  std::size_t sends_pending() const noexcept override {
    return pending_.load(std::memory_order_relaxed);
  }

  void abandon() noexcept override {
    std::lock_guard net(network_);
    finalized_ = true;
  }

  [[noreturn]] void abort_job(int status) noexcept override {
    // Another thread's MPI call ends soon (grain makes no blocking call but the trace's
    // collectives, and those could be what waits for the rank that went away): wait a
    // moment for the lock, then abort regardless — MPI_Abort must not wait for ever either.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!network_.try_lock() && std::chrono::steady_clock::now() < give_up)
      std::this_thread::yield();
    MPI_Abort(MPI_COMM_WORLD, status);
    std::_Exit(status);  // (MPI_Abort does not return; should it, the process still ends)
  }

  void finalize() override {
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

 private:
  // Announces a message above small_bytes: its tag and size, sent on comm_ in the message's
  // place, so that the receiver meets it in order and then receives the bytes on large_.
  struct notice {
    std::uint32_t tag;
    std::uint32_t reserved;
    std::uint64_t bytes;
  };

  struct outgoing {
    std::uint32_t dest;
    message_tag tag;
    std::vector<char> bytes;
    std::uint32_t parcels = 1;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Request notice_request = MPI_REQUEST_NULL;
    notice note{};  // sent from here: the element must not move while in flight
  };

  struct incoming {
    std::uint32_t source;
    message_tag tag;
    int slot = -1;                           // small: the ring slot holding the bytes
    std::size_t bytes = 0;                   // small: how many
    std::vector<char> big;                   // large: the bytes
    MPI_Request request = MPI_REQUEST_NULL;  // large: until they are in
  };

  void post_slot(int i) {
    const auto at = static_cast<std::size_t>(i);
    int rc = MPI_Irecv(slots_[at].get(), static_cast<int>(small_bytes), MPI_BYTE, MPI_ANY_SOURCE,
                       MPI_ANY_TAG, comm_, &ring_requests_[at]);
    if (rc != MPI_SUCCESS) throw std::runtime_error("grain: MPI_Irecv failed: " + mpi_error(rc));
    posted_.push_back(i);
  }

  // With network_ held: the slots handled since the last round go back to MPI.
  void repost_released() {
    if (released_.load(std::memory_order_relaxed) == 0) return;  // no read-modify-write when idle
    post_slots(released_.exchange(0, std::memory_order_acquire));
  }

  // With network_ held: the ring slots of `mask` (bit i: slot i) go back to MPI, in slot order
  // (posted_ records the order MPI matches them in, whatever it is).
  void post_slots(std::uint64_t mask) {
    for (; mask != 0; mask &= mask - 1) post_slot(std::countr_zero(mask));
  }

  // With network_ held. At most max_in_flight sends are started: beyond that Open MPI's ob1
  // queues them itself and walks its queue in every progress call (200,000 small calls in
  // flight took 150 µs each instead of a few).
  bool start_sends() {
    if (queued_.load(std::memory_order_acquire) == 0) return false;  // no lock when idle
    std::size_t n = 0;
    {
      std::lock_guard lock(outbox_mutex_);
      if (outbox_.empty() || in_flight_.size() >= max_in_flight) return false;
      n = std::min(outbox_.size(), max_in_flight - in_flight_.size());
      for (std::size_t i = 0; i < n; ++i) {
        in_flight_.push_back(std::move(outbox_.front()));
        outbox_.pop_front();
      }
      queued_.fetch_sub(n, std::memory_order_release);
    }
    // A deque's elements stay where they are while others are added or removed at its ends.
    for (std::size_t i = in_flight_.size() - n; i < in_flight_.size(); ++i) start(in_flight_[i]);
    return true;
  }

  // With network_ held; `m` is in in_flight_ (its address must not change while in flight).
  void start(outgoing& m) {
    const int dest = static_cast<int>(m.dest);
    int rc = MPI_SUCCESS;
    if (m.bytes.size() <= small_bytes) {
      rc = MPI_Isend(m.bytes.data(), static_cast<int>(m.bytes.size()), MPI_BYTE, dest,
                     static_cast<int>(m.tag), comm_, &m.request);
    } else {
      m.note = {static_cast<std::uint32_t>(m.tag), 0, m.bytes.size()};
      rc = MPI_Isend(&m.note, sizeof m.note, MPI_BYTE, dest, notice_tag, comm_, &m.notice_request);
      if (rc == MPI_SUCCESS)
        rc = MPI_Isend(m.bytes.data(), static_cast<int>(m.bytes.size()), MPI_BYTE, dest,
                       static_cast<int>(m.tag), large_, &m.request);
    }
    if (rc != MPI_SUCCESS)
      throw std::runtime_error("grain: MPI_Isend to rank " + std::to_string(m.dest) +
                               " failed: " + mpi_error(rc));
    // In the order MPI matches them (non-overtaking per destination on comm_, notices in
    // the messages' places): the trace pairs its send and receive records in that order.
    instrumentation::trace_message_sent(m.dest, static_cast<std::uint32_t>(m.tag), m.bytes.size(),
                                        m.parcels);
  }

  // Oldest first, stopping at the first one still in flight: sends complete mostly in order,
  // and testing every one of 100,000 queued sends in every round made a flood quadratic.
  bool complete_sends() {
    bool moved = false;
    while (!in_flight_.empty()) {
      outgoing& m = in_flight_.front();
      int done = 0;
      int rc = MPI_Test(&m.notice_request, &done, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS && done) rc = MPI_Test(&m.request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS)
        throw std::runtime_error("grain: a send to rank " + std::to_string(m.dest) +
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
    // The ring's receives match in the order they were posted (posted_), so testing the
    // oldest first meets messages in MPI's order (a bounded number per round: a flood must
    // not starve the sends). After a round that met nothing, one message is handed over
    // before the next slot is tested: a test of a receive still pending makes Open MPI run
    // its progress, and after a lone message (a call, its answer) nothing else has come, so
    // that progress only delayed the message, ~20 ns on each side of a round trip. A round
    // after one that met messages tests up to 64 (a flood arrives faster than rounds go).
    const int budget = met_last_round_ ? 64 : 1;
    int met = 0;
    for (int k = 0; k < budget && !posted_.empty(); ++k) {
      const int i = posted_.front();
      MPI_Request& req = ring_requests_[static_cast<std::size_t>(i)];
      int done = 0;
      MPI_Status st;
      int rc = MPI_Test(&req, &done, &st);
      if (rc != MPI_SUCCESS)
        throw std::runtime_error("grain: receiving a message failed: " + mpi_error(rc));
      if (!done) break;
      posted_.pop_front();
      moved = true;
      ++met;
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      const auto source = static_cast<std::uint32_t>(st.MPI_SOURCE);
      if (st.MPI_TAG == notice_tag) {
        notice n{};
        if (static_cast<std::size_t>(count) != sizeof n)
          throw std::runtime_error("grain: a message notice of " + std::to_string(count) +
                                   " bytes from rank " + std::to_string(source));
        std::memcpy(&n, slots_[static_cast<std::size_t>(i)].get(), sizeof n);
        post_slot(i);  // the notice is copied out
        incoming in{source,
                    static_cast<message_tag>(n.tag),
                    -1,
                    0,
                    std::vector<char>(static_cast<std::size_t>(n.bytes)),
                    MPI_REQUEST_NULL};
        rc = MPI_Irecv(in.big.data(), static_cast<int>(n.bytes), MPI_BYTE, st.MPI_SOURCE,
                       static_cast<int>(n.tag), large_, &in.request);
        if (rc != MPI_SUCCESS)
          throw std::runtime_error("grain: receiving from rank " + std::to_string(source) +
                                   " failed: " + mpi_error(rc));
        instrumentation::trace_message_received(source, n.tag, n.bytes);
        inbox_.push_back(std::move(in));
      } else {
        instrumentation::trace_message_received(source, static_cast<std::uint32_t>(st.MPI_TAG),
                                                static_cast<std::uint64_t>(count));
        incoming in{source, static_cast<message_tag>(st.MPI_TAG),
                    i,      static_cast<std::size_t>(count),
                    {},     MPI_REQUEST_NULL};
        // Complete, and nothing met before it still arriving: handed over as it is.
        if (inbox_.empty())
          arrived_.push_back(std::move(in));
        else
          inbox_.push_back(std::move(in));
      }
    }
    // Handed over in the order met: a small message waits for a large one before it.
    while (!inbox_.empty()) {
      incoming& f = inbox_.front();
      if (f.request != MPI_REQUEST_NULL) {
        int done = 0;
        int rc = MPI_Test(&f.request, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
          throw std::runtime_error("grain: receiving from rank " + std::to_string(f.source) +
                                   " failed: " + mpi_error(rc));
        if (!done) break;
      }
      arrived_.push_back(std::move(f));
      inbox_.pop_front();
      moved = true;
    }
    met_last_round_ = met > 0;
    return moved;
  }

  // Messages up to small_bytes land in a ring of ring_slots pre-posted receives: no probe, no
  // allocation. When every slot is taken, MPI keeps what arrives (its unexpected queue) until
  // one is posted again. 64 × 8 KiB: a coalesced message of 64 small parcels fits.
  static constexpr std::size_t small_bytes = 8192;
  static constexpr std::size_t ring_slots = 64;
  static constexpr int notice_tag = 15;  // not a message_tag
  static constexpr std::size_t max_in_flight = 64;
  MPI_Comm comm_ = MPI_COMM_NULL;   // small messages and notices
  MPI_Comm large_ = MPI_COMM_NULL;  // the bytes of large messages
  bool owns_mpi_ = false;
  bool finalized_ = false;
  const char* level_ = "";
  std::uint32_t rank_ = 0, size_ = 1;
  detail::spinlock network_;
  std::mutex outbox_mutex_;
  std::deque<outgoing> outbox_;
  std::deque<outgoing> in_flight_;
  std::vector<std::unique_ptr<char[]>> slots_;
  std::vector<MPI_Request> ring_requests_;
  std::deque<int> posted_;         // ring slots in MPI's hands, oldest first
  bool met_last_round_ = false;    // receive() met a message the last time (under network_)
  std::deque<incoming> inbox_;     // met, in order; large ones may still be arriving
  std::vector<incoming> arrived_;  // complete, handed over after the lock is released
  std::atomic<bool> delivering_{false};
  std::vector<incoming> handing_;  // what the delivering thread hands over (reused)
  // Slots handled outside the lock, to post again: one bit each (a ring of 64).
  std::atomic<std::uint64_t> released_{0};
  static_assert(ring_slots <= 64);
  std::atomic<std::size_t> queued_{0};  // outbox_.size(), read without its lock
  std::atomic<std::size_t> pending_{0};
  std::vector<process_identity> identities_;
  int max_tag_ = 32767;
};

}  // namespace

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
