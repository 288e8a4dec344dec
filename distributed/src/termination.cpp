// The end of a distributed program. Rank 0's main returns and its own tasks finish; but
// parcels may still be in flight (a post to rank 2 that will post to rank 1 ...). Rank 0 then
// runs waves (Mattern's four counters): each rank waits until it has no task left and reports
// how many parcel messages it sent and received (messages, not parcels: a message that does
// not decode still arrived, and its parcels cannot be counted); when the sums are equal, and equal
// to the previous wave's, nothing is in flight and nothing can start again, and rank 0 tells every
// rank to shut down. A rank answers a wave from its main thread (serve_until_shutdown), which also
// progresses the network while it waits, so the end never depends on a worker being free.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "grain/ext/runtime_core.hpp"
#include "parcelport.hpp"

namespace grain::distributed {

void parcelport::send_control(std::uint32_t dest, control_message m) {
  std::vector<char> b(sizeof m);
  std::memcpy(b.data(), &m, sizeof m);
  net_->send(dest, message_tag::control, std::move(b));
}

control_message parcelport::next_control() {
  for (;;) {
    {
      std::unique_lock lock(control_mutex_);
      if (control_cv_.wait_for(lock, std::chrono::milliseconds(2),
                               [&] { return !control_.empty(); })) {
        control_message m = control_.front();
        control_.pop_front();
        return m;
      }
    }
    progress();
  }
}

void parcelport::quiesce_root(runtime_core& rt) {
  if (!distributed() || rank_ != 0) return;
  std::uint64_t prev_sent = ~0ull, prev_received = ~0ull;
  for (std::uint32_t wave = 1;; ++wave) {
    rt.wait_quiescent();
    flush_coalesced();
    for (std::uint32_t r = 1; r < size_; ++r) send_control(r, {count_request, wave, 0, 0, 0});
    std::uint64_t sent = 0, received = 0;
    for (std::uint32_t got = 0; got + 1 < size_;) {
      control_message m = next_control();
      if (m.type == count_reply && m.wave == wave) {
        sent += m.sent;
        received += m.received;
        ++got;
      }
    }
    // Own counts after the others': whatever they sent to rank 0 before answering has been
    // counted as received here only if it arrived, which the next wave checks.
    rt.wait_quiescent();
    flush_coalesced();
    sent += counts_.messages_sent();
    received += counts_.messages_received.get();
    if (sent == received && sent == prev_sent && received == prev_received) break;
    prev_sent = sent;
    prev_received = received;
  }
  for (std::uint32_t r = 1; r < size_; ++r) send_control(r, {shutdown, 0, 0, 0, 0});
  // Out before this rank's trace stops (right after this): a worker holding the network may
  // have left them queued, and a message the others record as received must be recorded as
  // sent (under load the trace check found the shutdown messages missing on rank 0).
  while (net_->sends_pending() != 0) {
    progress();
    std::this_thread::yield();
  }
  spdlog::debug("grain: locality#0: every rank is idle and no parcel is in flight: shutting down");
}

void parcelport::serve_until_shutdown(runtime_core& rt) {
  if (!distributed() || rank_ == 0) return;
  for (;;) {
    control_message m = next_control();
    if (m.type == shutdown) return;
    if (m.type == count_request) {
      rt.wait_quiescent();
      flush_coalesced();
      send_control(
          0, {count_reply, m.wave, counts_.messages_sent(), counts_.messages_received.get(), 0});
    }
  }
}

void parcelport::flush_coalesced() {
  if (coalescer_) coalescer_->flush_all();
}

void parcelport::finalize() {
  if (!net_) return;
  coalescer_.reset();  // sends what is still queued and stops the flush timer
  net_->finalize();
}

void parcelport::abandon() noexcept {
  if (net_) net_->abandon();
}

}  // namespace grain::distributed
