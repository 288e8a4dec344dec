// The MPI transport's traffic (mpi_transport.hpp): starting sends (at once when the network
// is free, else from the outbox in the next progress round), retiring them, meeting messages
// in the ring of receives and handing them over in MPI's order, outside the network lock.
// Every function here but send, send_reusing and progress runs with network_ held.
#if GRAIN_WITH_MPI

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "grain/instrumentation/trace_group.hpp"
#include "mpi_transport.hpp"

namespace grain::distributed {

void mpi_transport::send(std::uint32_t dest, message_tag tag, std::vector<char> bytes,
                         std::uint32_t parcels) {
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
bool mpi_transport::send_reusing(std::uint32_t dest, message_tag tag, std::vector<char>& bytes,
                                 std::uint32_t parcels) {
  if (bytes.size() > small_bytes) return false;
  std::unique_lock net(network_, std::try_to_lock);
  if (!net.owns_lock() || finalized_ || queued_.load(std::memory_order_acquire) != 0 ||
      in_flight_.size() >= max_in_flight)
    return false;
  MPI_Request request = MPI_REQUEST_NULL;
  const std::uint64_t handed_at = instrumentation::trace_message_clock();
  int rc = MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, static_cast<int>(dest),
                     static_cast<int>(tag), comm_, &request);
  if (rc != MPI_SUCCESS)
    throw std::runtime_error("grain: MPI_Isend to rank " + std::to_string(dest) +
                             " failed: " + mpi_error(rc));
  instrumentation::trace_message_sent(dest, static_cast<std::uint32_t>(tag), bytes.size(), parcels,
                                      handed_at);
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

bool mpi_transport::progress(const receiver& deliver) {
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
      deliver(m.source, m.tag, {slots_[static_cast<std::size_t>(m.slot)].get(), m.bytes}, nullptr);
    else
      deliver(m.source, m.tag, m.big, &m.big);
  }
  std::uint64_t released = 0;
  for (auto& m : handing_)
    if (m.slot >= 0) released |= std::uint64_t{1} << m.slot;
  handing_.clear();
  // Back to MPI in the next round, not here: a thread waiting for an answer sees its future
  // set only once this call returns, and posting a receive (MPI_Irecv, ~300 instructions)
  // would delay it on every round trip. The next round comes at once after a round that moved
  // something, and on a caller it overlaps the callee's work.
  if (released) released_.fetch_or(released, std::memory_order_release);
  return true;
}

void mpi_transport::post_slot(int i) {
  const auto at = static_cast<std::size_t>(i);
  int rc = MPI_Irecv(slots_[at].get(), static_cast<int>(small_bytes), MPI_BYTE, MPI_ANY_SOURCE,
                     MPI_ANY_TAG, comm_, &ring_requests_[at]);
  if (rc != MPI_SUCCESS) throw std::runtime_error("grain: MPI_Irecv failed: " + mpi_error(rc));
  posted_.push_back(i);
}

void mpi_transport::repost_released() {
  if (released_.load(std::memory_order_relaxed) == 0) return;  // no read-modify-write when idle
  post_slots(released_.exchange(0, std::memory_order_acquire));
}

void mpi_transport::post_slots(std::uint64_t mask) {
  for (; mask != 0; mask &= mask - 1) post_slot(std::countr_zero(mask));
}

// At most max_in_flight sends are started: beyond that Open MPI's ob1
// queues them itself and walks its queue in every progress call (200,000 small calls in
// flight took 150 µs each instead of a few).
bool mpi_transport::start_sends() {
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

void mpi_transport::start(outgoing& m) {
  const int dest = static_cast<int>(m.dest);
  const std::uint64_t handed_at = instrumentation::trace_message_clock();
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
                                      m.parcels, handed_at);
}

// Oldest first, stopping at the first one still in flight: sends complete mostly in order,
// and testing every one of 100,000 queued sends in every round made a flood quadratic.
bool mpi_transport::complete_sends() {
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

bool mpi_transport::receive() {
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

}  // namespace grain::distributed

#endif
