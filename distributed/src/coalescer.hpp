#pragma once
// Parcel coalescing (Wagle 2019 chapter 3, Algorithm 1): parcels of a coalesced action bound for
// one destination wait in a queue until `parcels` of them are there or `interval` µs have
// passed since the first, and then leave as one message. A parcel that comes more than
// `interval` after the previous one (sparse traffic) goes at once, and a message never grows
// beyond the byte cap. The two parameters are live knobs per action
// (coalescing.<action>.parcels / .interval, following coalescing.default.* until set). The
// interval is kept by a timer on its own OS thread: tasks are not preemptive (Wagle 2019 §3.1),
// so a task could not be relied on to flush in time. Every flush of a queue happens under
// its lock and hands the message to the transport in order, so parcels of one (destination,
// action) are never reordered, lost or duplicated. With coalescing.event-parcels > 0 the
// coalescer also raises an application event "coalescing.<action>" every that many parcels,
// and when the flush timer had to send one of its queues (at most one per ms): a policy then
// samples on the traffic itself, not on a wall-clock period that a burst of a few
// milliseconds falls between.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "grain/distributed/action.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/knob.hpp"
#include "parcel.hpp"

namespace grain::distributed {

// What one coalesced action did on this locality (all destinations together): the
// /coalescing counters and the events read these. The per-parcel figures are kept per
// destination by that destination's queue, one writer at a time under its lock, so a parcel
// costs plain stores, not atomic read-modify-writes (a dense burst posts millions a second);
// readers sum the destinations.
struct coalescing_stats {
  struct per_destination {
    std::atomic<std::uint64_t> parcels{0}, gaps{0}, gap_ns{0};  // gaps: arrivals after the first
    // Σ bit_width(gap in ns) ≈ Σ log2(gap) + 1: the geometric mean of the gaps, which bursts
    // dominate and pauses between them do not (the policy's fill-time model).
    std::atomic<std::uint64_t> log2_gaps{0};
  };
  std::unique_ptr<per_destination[]> per_dest;
  std::size_t destinations = 0;
  std::uint64_t parcels() const noexcept { return sum(&per_destination::parcels); }
  std::uint64_t gaps() const noexcept { return sum(&per_destination::gaps); }
  std::uint64_t gap_ns() const noexcept { return sum(&per_destination::gap_ns); }
  std::uint64_t log2_gaps() const noexcept { return sum(&per_destination::log2_gaps); }

  std::atomic<std::uint64_t> messages{0};
  std::atomic<std::uint64_t> bytes{0};          // of the messages sent
  std::atomic<std::uint64_t> timer_flushes{0};  // messages the flush timer sent
  std::atomic<std::uint64_t> last_event_parcels{0}, last_event_ns{0};
  // The gaps; a queue adds its parcels' gaps when their message leaves.
  std::shared_ptr<instrumentation::histogram> gap_histogram;

 private:
  std::uint64_t sum(std::atomic<std::uint64_t> per_destination::*f) const noexcept {
    std::uint64_t n = 0;
    for (std::size_t d = 0; d < destinations; ++d)
      n += (per_dest[d].*f).load(std::memory_order_relaxed);
    return n;
  }
};

// Held by one thread at a time for a few hundred instructions (appending a parcel; sending a
// message): a test-and-test-and-set lock, cheaper than a mutex's two atomic operations and
// call. It yields after a while, for the flush timer's thread may be preempted holding it.
class queue_lock {
 public:
  void lock() noexcept {
    while (flag_.exchange(true, std::memory_order_acquire)) wait();
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  void wait() noexcept;
  std::atomic<bool> flag_{false};
};

// The arrival histogram: gaps in [0, 1 ms) in 20 buckets, below and above in buckets 0 and
// 21 (instrumentation::histogram's layout). gap_bucket is its bucket_of for a gap in whole ns,
// in integer arithmetic with a constant divisor: a parcel costs no double division.
inline constexpr std::size_t gap_histogram_buckets = 20;
inline constexpr std::uint64_t gap_histogram_range_ns = 1'000'000;
constexpr std::size_t gap_bucket(std::uint64_t gap_ns) noexcept {
  return gap_ns >= gap_histogram_range_ns
             ? gap_histogram_buckets + 1
             : static_cast<std::size_t>(gap_ns / (gap_histogram_range_ns / gap_histogram_buckets)) +
                   1;
}

// The flush timer's accuracy: how late after a queue's deadline it sent the queue.
struct timer_stats {
  std::atomic<std::uint64_t> flushes{0}, late_ns{0}, max_late_ns{0};
};

class coalescer {
 public:
  // `send` hands a finished message with `parcels` parcels to the network (called with the
  // queue's lock held, so it must not call back into the coalescer).
  using sender =
      std::function<void(std::uint32_t dest, std::vector<char>&& msg, std::size_t parcels)>;
  coalescer(std::uint32_t rank, std::uint32_t localities, sender send);
  ~coalescer();  // flushes every queue and stops the timer
  coalescer(const coalescer&) = delete;
  coalescer& operator=(const coalescer&) = delete;

  // Coalesce this action's parcels from now on (defines its knobs; idempotent). Throws
  // std::invalid_argument when another coalesced action has the same short name.
  void enable(const detail::action_info& a);
  // Whether any action is coalesced: one load, so that a parcel of a program that coalesces
  // nothing does not look its action up.
  bool any() const noexcept { return coalesced_.load(std::memory_order_acquire) != 0; }
  // Queues p for dest (or sends it at once, see above); false when p's action is not
  // coalesced (the caller sends it alone).
  bool submit(std::uint32_t dest, const parcel& p);
  // A post of action `a` whose arguments `write` serialises (appends to the vector) straight
  // into the open message to dest: no parcel object, no allocation per parcel. False, without
  // calling `write`, when the action is not coalesced. An exception of `write` leaves the
  // queue as it was.
  bool post(std::uint32_t dest, const detail::action_info& a, const detail::args_writer& write);
  // The same for a call whose answer goes to `continuation`.
  bool call(std::uint32_t dest, const detail::action_info& a, std::uint64_t continuation,
            const detail::args_writer& write);
  // Sends every queued parcel now (the end of the program, before counting messages).
  void flush_all();

  // The knob names' middle part: the action's name after its last "::".
  static std::string short_name(const std::string& action_name);
  struct action_view {
    std::string name;  // short name
    const coalescing_stats* stats;
  };
  std::vector<action_view> actions() const;
  const timer_stats& timer() const noexcept { return timer_; }
  // Registers the /coalescing counters of every coalesced action, now and as more are
  // enabled, in `reg`; nullptr removes them (before the coalescer goes away).
  void publish_counters(instrumentation::counter_registry* reg);

 private:
  struct queue {
    queue_lock m;
    std::vector<char> msg;        // the batch being built (empty: nothing queued)
    std::uint64_t signature = 0;  // of the batch's action
    std::size_t parcels = 0;
    std::size_t last_bytes = 0;              // of the last message sent: the next one's reserve
    std::uint64_t last_ns = 0;               // arrival of the previous parcel (0: none yet)
    std::atomic<std::uint64_t> first_ns{0};  // arrival of the first queued parcel (0: empty)
    // The queued parcels' gaps, by histogram bucket, until their message leaves.
    std::uint32_t gap_buckets[gap_histogram_buckets + 2] = {};
    double gap_sum = 0;
    std::uint32_t gap_count = 0;
  };
  struct action_state {
    std::string name;
    std::uint64_t id = 0;
    knob* parcels = nullptr;
    knob* interval = nullptr;
    std::atomic<bool> own_parcels{false}, own_interval{false};
    std::unique_ptr<queue[]> queues;
    coalescing_stats stats;
  };
  std::int64_t max_parcels(const action_state& s) const noexcept;
  std::int64_t interval_us(const action_state& s) const noexcept;
  // The coalesced action with this id; nullptr when it is not coalesced. No lock: the table
  // only grows, and its entries never move.
  action_state* find(std::uint64_t action) const noexcept;
  void flush(std::uint32_t dest, queue& q, action_state& s);  // q.m held
  // submit, post and call: the action's queue to dest takes the parcel (false when the action
  // is not coalesced or dest is not a locality).
  bool enqueue(std::uint32_t dest, std::uint64_t action, parcel_kind kind, std::uint64_t signature,
               std::uint64_t continuation, const detail::args_writer& write);
  // Algorithm 1 for one parcel; returns the arrival time.
  std::uint64_t queue_parcel(std::uint32_t dest, action_state& s, parcel_kind kind,
                             std::uint64_t signature, std::uint64_t continuation,
                             const detail::args_writer& write);
  // No lock held. `by_timer`: the flush timer sent a queue of s (an event without waiting
  // for `coalescing.event-parcels` more parcels; still at most one per ms).
  void maybe_raise_event(action_state& s, std::uint64_t now, bool by_timer = false);
  void timer_loop();
  void wake_timer();

  std::uint32_t rank_, localities_;
  sender send_;
  knob* default_parcels_;
  knob* default_interval_;
  knob* max_bytes_;
  knob* event_parcels_;
  mutable std::shared_mutex states_m_;
  std::vector<std::unique_ptr<action_state>> states_;
  // The same, for lookups without states_m_ (one per parcel): entries [0, coalesced_) are set.
  static constexpr std::size_t max_coalesced = 64;
  std::atomic<action_state*> table_[max_coalesced] = {};
  std::atomic<std::size_t> coalesced_{0};
  instrumentation::counter_registry* registry_ = nullptr;  // under states_m_
  std::vector<int> counter_ids_;
  timer_stats timer_;
  std::mutex timer_m_;
  std::condition_variable timer_cv_;
  bool wake_ = false, stop_ = false;
  std::atomic<std::uint64_t> timer_next_{~0ULL};  // when the timer wakes next
  std::thread timer_thread_;
};

}  // namespace grain::distributed
