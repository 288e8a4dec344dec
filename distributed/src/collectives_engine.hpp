#pragma once
// The collectives of one locality (grain/distributed/collectives.hpp): a table of generations
// per kind of collective. Contributions are combined into their generation's slot as they
// arrive; a full slot is started as ONE network operation (collective_network), in generation
// order per kind; background work tests it and hands the result to every contributor. Every
// rank's block carries a header (type, generation, count, error), so mismatches and failed
// contributions reach all localities as errors instead of wrong numbers or a hang. Without a
// network (one locality) a full slot completes at once.
#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "collective_network.hpp"
#include "grain/detail/waiter.hpp"
#include "grain/distributed/collectives.hpp"

namespace grain::distributed {

struct collective_counts {
  std::atomic<std::uint64_t> operations{0};     // generations completed (or failed)
  std::atomic<std::uint64_t> latency_ns{0};     // Σ first local contribution -> results handed out
  std::atomic<std::uint64_t> local_wait_ns{0};  // Σ first -> last local contribution
  std::atomic<std::uint64_t> errors{0};         // generations that failed here
  std::atomic<std::uint64_t> in_flight{0};      // started on the network, not finished
};

class collectives_engine {
 public:
  collectives_engine(std::uint32_t rank, std::uint32_t size,
                     std::unique_ptr<collective_network> net);
  ~collectives_engine();
  collectives_engine(const collectives_engine&) = delete;
  collectives_engine& operator=(const collectives_engine&) = delete;

  static collectives_engine* current() noexcept;
  void make_current(bool on) noexcept;

  void contribute(detail::collective_contribution&& c);
  // Background work: starts full generations, tests those in flight, enforces the timeout.
  bool progress();
  std::uint64_t next_generation(detail::collective_kind k);
  const collective_counts& counts() const noexcept { return counts_; }
  std::uint32_t rank() const noexcept { return rank_; }
  // At the end of the runtime: what still waits fails (its contributors get an error).
  void shutdown();
  // A locality died (peer_watch.hpp): every generation still waiting fails with `why`, and
  // so does every later contribution (no collective can complete without it).
  void fail_all(const std::string& why);

 private:
  enum class state { collecting, ready, started, finished };
  using done_fn = detail::collective_done;
  struct slot {
    detail::collective_kind kind{};
    std::uint64_t generation = 0;
    std::uint32_t root = 0, size = 0, expected = 1, arrived = 0;
    std::uint64_t type_id = 0;
    state st = state::collecting;
    bool delivered = false;   // contributors already told (timeout); the network op goes on
    std::vector<char> local;  // combined value, root's value, or the gathered values
    bool has_value = false;
    std::function<void(void*, const void*)> combine;
    std::vector<done_fn> done;
    std::vector<bool> sites;  // which indexed contributors arrived
    std::string error;        // this locality's error for the generation
    std::uint64_t first_ns = 0, last_ns = 0, started_ns = 0;
    std::vector<char> send, recv;
  };
  struct channel {
    std::map<std::uint64_t, slot> slots;
    // The lone contributor's generation (docs/collectives.md, "Latency"): one contribution
    // that is a whole generation by itself, with no other generation of the kind open, goes
    // here instead of the table and starts at once; its result is handed out from its own
    // buffers. `lone_busy` (under m_): on the network; `lone_handing` (no lock): its result
    // still being handed out, so the buffers are not reused yet.
    slot lone;
    bool lone_busy = false;
    std::atomic<bool> lone_handing{false};
    std::uint64_t next_start = 0;          // generations below it started (or finished) here
    std::uint64_t auto_next = 0;           // the slot automatic contributions without an index fill
    std::vector<std::uint64_t> site_next;  // per contributor index: its next generation
    std::vector<std::map<std::uint64_t, slot>::node_type> spares;  // retired slots, for reuse
  };
  static constexpr std::size_t max_spares = 8;
  struct started_op {
    std::uint64_t id;
    detail::collective_kind kind;
    std::uint64_t generation;
    bool lone;  // channel::lone, not a table slot
  };
  // Results handed out after the lock is released (a promise may resume a task inline).
  struct delivery {
    detail::collective_kind kind{};
    std::vector<done_fn> done;
    std::vector<char> result;
    std::exception_ptr error;
  };
  // The lone generation's result, handed out from its slot's buffers after the lock.
  struct lone_delivery {
    channel* ch = nullptr;
    std::span<const char> result;
    std::exception_ptr error;
  };

  // The lone path: true when c was taken (started, or failed to start and reported).
  bool try_lone(channel& ch, detail::collective_contribution& c, std::vector<delivery>& out);
  std::map<std::uint64_t, slot>::iterator new_slot(channel& ch, std::uint64_t g);
  static void renew(slot& s);
  void retire(channel& ch, std::map<std::uint64_t, slot>::iterator it);
  void add(slot& s, detail::collective_contribution& c);  // takes c's done and combine
  void start_ready(channel& ch, std::vector<delivery>& out);
  void fill_block(slot& s) const;  // s.send: the header and the local value
  // Turns the gathered blocks into the result (or an error) for this locality.
  delivery finish(slot& s, std::span<char> blocks, const std::string& net_error);
  // The checks of every rank's header and the combine, in place in `blocks`: the error, or
  // empty and `result` pointing into `blocks` or the slot's own value.
  std::string outcome(slot& s, std::span<char> blocks, const std::string& net_error,
                      std::span<const char>& result);
  // The generation finished here: outcome, then the counters; its error, if any.
  std::exception_ptr conclude(slot& s, std::span<char> blocks, const std::string& net_error,
                              std::span<const char>& result);
  void hand_out_lone(lone_delivery& d);
  // The slot's contributors get `why` as their error, once (the network operation, if any,
  // goes on); `count`: as a failed operation in the counters.
  delivery abandon(slot& s, const std::string& why, bool count);
  void account(const slot& s, bool failed);
  static void deliver(std::vector<delivery>& out);
  static bool deliveries_as_tasks() noexcept;
  // From background work: while a trace records task phases, each delivery as a task named
  // "collective:<kind>", so that the completion shows as a region (tracing.md) on the worker
  // that saw it; otherwise at once (deliver).
  static void deliver_as_tasks(std::vector<delivery>& out);
  std::string where(const slot& s) const;

  std::uint32_t rank_, size_;
  std::unique_ptr<collective_network> net_;
  // Held for a few hundred ns (a table look-up, an MPI post or test); tried by every progress
  // round, so a spinlock (grain/detail/waiter.hpp) rather than a pthread mutex.
  grain::detail::spinlock m_;
  std::array<channel, detail::collective_kind_count> channels_;
  std::vector<started_op> started_;  // on the network (a few at a time: a linear search)
  std::vector<collective_network::finished> finished_;  // under m_: reused by progress
  std::uint64_t next_op_ = 1;
  std::atomic<std::size_t> open_{0};  // slots in the table: progress has nothing to do at 0
  static constexpr std::uint64_t scan_period_ns = 1'000'000;
  static constexpr unsigned scan_clock_rounds = 32;  // progress rounds between clock reads
  std::uint64_t last_scan_ns_ = 0;  // under m_: the last look at every slot for timeouts
  unsigned rounds_ = 0;             // under m_: progress rounds since the last clock read
  bool retry_start_ = false;        // under m_: a full slot waits for a free network
  std::string dead_;                // under m_: why nothing can complete any more
  collective_counts counts_;
};

// The timeout of collectives.hpp, in ns (process-wide, read by the engine).
std::uint64_t collective_timeout_ns() noexcept;

}  // namespace grain::distributed
