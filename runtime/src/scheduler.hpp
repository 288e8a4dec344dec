#pragma once
// The scheduler's data: pools of workers, each with staged (task descriptions) and pending
// (ready user threads) deques per priority. What is done with it lives beside it, one concept
// per file: work_finding.hpp (lookup and steal order), wake.cpp (injection, wake-ups),
// worker_loop.cpp (the loop, idling), phase_timing.hpp, spawn.cpp, suspend.cpp, park.cpp,
// fiber_cache.cpp, stack_guard.cpp, scheduler_knobs.cpp; scheduler.cpp builds and stops it.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chase_lev_deque.hpp"
#include "fiber.hpp"
#include "fiber_cache.hpp"
#include "grain/detail/shared_state.hpp"
#include "grain/detail/task.hpp"
#include "grain/detail/waiter.hpp"
#include "grain/ext/worker_stats.hpp"
#include "grain/knob.hpp"
#include "grain/topology.hpp"
#include "scheduler_knobs.hpp"
#include "stack_pool.hpp"
#include "timer_service.hpp"

namespace grain::detail {

struct pool;
class scheduler;

inline constexpr int num_priorities = 3;

struct alignas(cache_line) worker {
  unsigned id = 0;       // global worker number
  unsigned index = 0;    // number inside its pool (0 while it serves a pool not its own)
  pool* home = nullptr;  // the pool it serves now; only the worker itself reads and writes it
  // pool.<name>.share (pool_share.cpp) moves a worker to another pool and back: where it was
  // configured, the pool it serves now (read by thieves and counters), a requested move.
  pool* origin = nullptr;
  unsigned origin_index = 0;
  std::atomic<unsigned> pool_now{0};
  std::atomic<unsigned> move_to{0};  // pool index + 1, 0: stay
  unsigned planned_pool = 0;         // where it serves once its requested move is done
  scheduler* sched = nullptr;
  worker_stats* stats = nullptr;

  chase_lev_deque<task_base*> staged[num_priorities];
  chase_lev_deque<fiber*> pending[num_priorities];

  fiber thread_fiber;                 // the OS thread's own context
  fiber* current = nullptr;           // fiber running now
  task_base* current_task = nullptr;  // innermost task running now
  task_base* run_next = nullptr;      // fork: the child to run before anything else
  local_fibers free_fibers;

  std::uint64_t guid_counter = 0;
  std::uint64_t rng = 0;
  std::uint64_t phase_start_ns = 0;
  std::uint64_t last_func_ns = 0;
  std::uint64_t callable_end_ns = 0;  // mark_callable_end(): the running task's callable returned
  std::uint64_t next_background_ns = 0;  // busy: run the pool's background work from then on
  unsigned spawn_counter = 0;
  stat_counter spawned;           // tasks pushed through spawn() by this worker
  stat_counter finished_spawned;  // of those (from any worker), finished here

  std::vector<worker*> victims;  // same NUMA domain first (steal_order.hpp)
  std::size_t near_victims = 0;  // how many of them share this worker's NUMA domain
  unsigned pu = 0;               // index into topology::pus()
  std::thread thread;
};

struct pool {
  std::string name;
  unsigned index = 0;
  std::vector<worker*> workers;
  std::atomic<unsigned> active_target{0};
  alignas(cache_line) std::atomic<int> sleepers{0};
  alignas(cache_line) std::atomic<std::uint32_t> work_epoch{0};
  alignas(cache_line) std::atomic<std::uint32_t> config_epoch{0};
  std::atomic<std::size_t> inject_count{0};
  std::mutex inject_mutex;
  std::deque<task_base*> inject_tasks[num_priorities];
  std::deque<fiber*> inject_fibers[num_priorities];
  // Tried once per round by every idle or waiting worker: a spinlock, whose try is one exchange
  // (a pthread mutex's try and unlock are two calls and two locked instructions).
  detail::spinlock background_mutex;
  std::vector<std::pair<int, std::function<bool()>>> background;
  std::atomic<int> background_count{0};
  knob* workers_knob = nullptr;
  knob* share_knob = nullptr;
};

struct scheduler_config {
  std::vector<pool_request> pools;  // in order; the last one is "default"
  thread_mapping mapping = thread_mapping::balanced;
  std::size_t stack_size = stack_pool::default_stack_size;
  bool bind = true;
};

class scheduler {
 public:
  scheduler(const scheduler_config& cfg, const topology& topo);
  ~scheduler();
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  static scheduler* instance() noexcept;

  void start();
  // Wait until every spawned task has finished and no user thread is suspended.
  void wait_quiescent();
  void stop();  // after wait_quiescent: wake and join workers

  unsigned num_workers() const noexcept { return static_cast<unsigned>(workers_.size()); }
  worker& worker_at(unsigned i) noexcept { return *workers_[i]; }
  pool& pool_at(unsigned i) noexcept { return *pools_[i]; }
  unsigned num_pools() const noexcept { return static_cast<unsigned>(pools_.size()); }
  pool& default_pool() noexcept { return *pools_.back(); }
  int pool_index(std::string_view name) const noexcept;
  worker_stats& stats(unsigned w) noexcept { return stats_[w]; }
  const placement& worker_placement() const noexcept { return placement_; }

  void set_active_workers(unsigned pool, unsigned n);
  // Moves workers between `pool` (not the default pool) and the default pool until n serve
  // `pool` (pool_share.cpp). Each pool keeps at least one worker of its own.
  void set_pool_share(unsigned pool, unsigned n);
  unsigned pool_share(unsigned pool) noexcept;  // workers serving it once requested moves are done
  int add_background_work(unsigned pool, std::function<bool()> fn);
  void remove_background_work(int id);

  // Entry points used by the public API (through detail:: free functions).
  void spawn_external(task_base* t);
  void make_ready(fiber* f);
  timer_service& timers() noexcept { return timers_; }
  stack_pool& stacks() noexcept { return stacks_; }
  fiber_cache& fibers() noexcept { return fibers_; }
  const scheduler_knobs& knobs() const noexcept { return knobs_; }
  std::atomic<bool>& stopping() noexcept { return stopping_; }
  std::uint64_t external_spawned() const noexcept {
    return external_spawned_.load(std::memory_order_relaxed);
  }
  std::atomic<std::int64_t> suspended{0};  // user threads currently suspended

  // Fibers outside the free lists beyond the one each worker runs on: those holding a
  // suspended user thread (fiber_cache.cpp). record_fibers_left keeps the count at stop for
  // detail::fibers_in_use().
  std::int64_t fibers_in_use() noexcept;

 private:
  void worker_main(worker* w);  // worker_loop.cpp
  void record_fibers_left() noexcept;
  std::vector<std::unique_ptr<pool>> pools_;
  std::vector<std::unique_ptr<worker>> workers_;
  std::unique_ptr<worker_stats[]> stats_;
  placement placement_;
  const topology& topo_;
  bool bind_;
  stack_pool stacks_;
  fiber_cache fibers_;  // after stacks_: its fibers go before their stacks
  timer_service timers_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> external_spawned_{0};
  std::atomic<unsigned> loop_fibers_{0};  // workers that took their first loop fiber
  scheduler_knobs knobs_;
  std::uint64_t unread_at_start_ = 0;  // unread_exceptions() when this scheduler started
  std::atomic<int> next_background_id_{1};
  std::mutex share_mutex_;  // serialises set_pool_share (planned_pool)
};

// pool_share.cpp: the worker's side of a move, at a point of its loop where it runs no task.
void migrate(worker* w);

// worker_loop.cpp: the worker this OS thread runs, or nullptr; read afresh at every call,
// since user threads migrate between OS threads (config.hpp, GRAIN_FRESH_TLS_READER).
extern thread_local worker* tls_worker asm("grain_detail_tls_worker");
#if GRAIN_HAS_FRESH_TLS_READER
GRAIN_FRESH_TLS_READER(current_worker, worker*, "grain_detail_tls_worker")
#else
worker* current_worker() noexcept;
#endif
void worker_loop();
// A user thread about to suspend for a value that background work may bring (a remote result,
// a collective) on a worker with nothing else queued: runs the pool's background work here
// until ready(ctx), other work is queued, or waiter_poll_ns passed, instead of a suspension,
// an idle loop and a resumption. True when ready(ctx) became true.
inline constexpr std::uint64_t waiter_poll_ns = 10'000;
bool wait_by_polling_background(bool (*ready)(const void*), const void* ctx) noexcept;
void fiber_entry(bctx::transfer_t t);  // what every loop fiber starts with

}  // namespace grain::detail
