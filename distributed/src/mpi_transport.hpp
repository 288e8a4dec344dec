#pragma once
// The MPI transport's class (transport.hpp): its state and the contract of each step. Setup,
// shutdown and failure handling are mpi_transport.cpp's; sending, receiving and handing
// messages over are mpi_transport_traffic.cpp's.
//
// Thread level MPI_THREAD_SERIALIZED, or SINGLE (transport.hpp, mpi_threads): any thread may
// send or progress, but only one at a time, under `network_` — a try_lock, so a worker never
// waits for another one's MPI call (Wagle 2019 §3.2: progress is background work, not a
// thread of its own). Small messages (≤ 8 KiB) land in a ring of receives posted in advance
// (no probe, no allocation per message); a larger one is announced there by a notice in its
// place and its bytes follow on a second communicator, so every message is handed over in
// the order MPI matched it. Everything runs on duplicates of MPI_COMM_WORLD, so the
// application's own MPI traffic cannot match grain's messages.
//
// Included only where GRAIN_WITH_MPI is set: the one library that sees <mpi.h>.
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport.hpp"

namespace grain::distributed {

// MPI's words for an error code.
std::string mpi_error(int code);

class mpi_transport final : public transport {
 public:
  explicit mpi_transport(mpi_threads threads);
  ~mpi_transport() override;

  std::uint32_t rank() const noexcept override { return rank_; }
  std::uint32_t size() const noexcept override { return size_; }
  const char* description() const noexcept override { return level_; }
  int max_tag() const noexcept override { return max_tag_; }
  const std::vector<process_identity>& identities() const noexcept override { return identities_; }
  detail::spinlock& network_mutex() noexcept override { return network_; }
  std::size_t sends_pending() const noexcept override {
    return pending_.load(std::memory_order_relaxed);
  }

  // mpi_transport_traffic.cpp
  void send(std::uint32_t dest, message_tag tag, std::vector<char> bytes,
            std::uint32_t parcels) override;
  bool send_reusing(std::uint32_t dest, message_tag tag, std::vector<char>& bytes,
                    std::uint32_t parcels) override;
  bool progress(const receiver& deliver) override;

  // mpi_transport.cpp
  void abandon() noexcept override;
  [[noreturn]] void abort_job(int status) noexcept override;
  void finalize() override;

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

  // The steps below run with network_ held (mpi_transport_traffic.cpp).
  // Ring slot i goes (back) to MPI.
  void post_slot(int i);
  // The slots handled since the last round go back to MPI.
  void repost_released();
  // The ring slots of `mask` (bit i: slot i) go back to MPI, in slot order (posted_ records
  // the order MPI matches them in, whatever it is).
  void post_slots(std::uint64_t mask);
  // Starts queued sends, at most max_in_flight in all.
  bool start_sends();
  // Starts `m`, which is in in_flight_ (its address must not change while in flight).
  void start(outgoing& m);
  // Retires finished sends, oldest first.
  bool complete_sends();
  // Meets arrived messages and moves the complete ones, in order, to arrived_.
  bool receive();

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

}  // namespace grain::distributed
