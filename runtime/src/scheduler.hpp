#pragma once
// The scheduler: pools of workers, each with staged (task descriptions) and pending (ready
// user threads) deques per priority, work stealing within a pool (same NUMA domain first),
// sleeping idle workers, elastic pool sizes, and user-thread suspension.
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
#include "grain/detail/shared_state.hpp"
#include "grain/detail/task.hpp"
#include "grain/detail/waiter.hpp"
#include "grain/knob.hpp"
#include "grain/topology.hpp"
#include "grain/ext/worker_stats.hpp"
#include "stack_pool.hpp"
#include "timer_service.hpp"

namespace grain::detail {

struct pool;
class scheduler;

inline constexpr int num_priorities = 3;

struct alignas(cache_line) worker {
  unsigned id = 0;     // global worker number
  unsigned index = 0;  // number inside its pool
  pool* home = nullptr;
  scheduler* sched = nullptr;
  worker_stats* stats = nullptr;

  chase_lev_deque<task_base*> staged[num_priorities];
  chase_lev_deque<fiber*> pending[num_priorities];

  fiber thread_fiber;                 // the OS thread's own context
  fiber* current = nullptr;           // fiber running now
  task_base* current_task = nullptr;  // innermost task running now
  task_base* run_next = nullptr;      // fork: the child to run before anything else
  fiber* free_fibers = nullptr;
  unsigned free_count = 0;

  std::uint64_t guid_counter = 0;
  std::uint64_t rng = 0;
  std::uint64_t phase_start_ns = 0;
  std::uint64_t last_func_ns = 0;
  std::uint64_t callable_end_ns = 0;  // mark_callable_end(): the running task's callable returned
  unsigned spawn_counter = 0;
  stat_counter spawned;           // tasks pushed through spawn() by this worker
  stat_counter finished_spawned;  // of those (from any worker), finished here

  std::vector<worker*> victims;  // same pool; same NUMA domain first
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
  std::mutex background_mutex;
  std::vector<std::pair<int, std::function<bool()>>> background;
  std::atomic<int> background_count{0};
  knob* workers_knob = nullptr;
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
  int add_background_work(unsigned pool, std::function<bool()> fn);
  void remove_background_work(int id);

  // Entry points used by the public API (through detail:: free functions).
  void spawn_external(task_base* t);
  void make_ready(fiber* f);
  timer_service& timers() noexcept { return timers_; }
  stack_pool& stacks() noexcept { return stacks_; }
  bool steal_enabled() const noexcept {
    return steal_knob_ == nullptr || steal_knob_->value() != 0;
  }
  std::atomic<bool>& stopping() noexcept { return stopping_; }
  std::uint64_t external_spawned() const noexcept {
    return external_spawned_.load(std::memory_order_relaxed);
  }
  std::atomic<std::int64_t> suspended{0};  // user threads currently suspended

  // Worker-side helpers (scheduler.cpp).
  void notify_work(pool& p) noexcept;
  void inject_task(pool& p, task_base* t);
  void inject_fiber(pool& p, fiber* f);
  fiber* get_free_fiber(worker* w);
  void put_free_fiber(worker* w, fiber* f) noexcept;

 private:
  void worker_main(worker* w);
  std::vector<std::unique_ptr<pool>> pools_;
  std::vector<std::unique_ptr<worker>> workers_;
  std::unique_ptr<worker_stats[]> stats_;
  placement placement_;
  const topology& topo_;
  bool bind_;
  stack_pool stacks_;
  timer_service timers_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> external_spawned_{0};
  std::mutex global_fibers_mutex_;
  fiber* global_free_fibers_ = nullptr;
  std::size_t global_free_count_ = 0;
  std::vector<fiber*> all_fibers_;  // under global_fibers_mutex_, freed at destruction
  knob* steal_knob_ = nullptr;
  std::uint64_t unread_at_start_ = 0;  // unread_exceptions() when this scheduler started
  std::atomic<int> next_background_id_{1};
};

worker* current_worker() noexcept;
void worker_loop();

}  // namespace grain::detail
