// The scheduler's construction from its configuration (pools, placement, victims), its
// start, quiescence and stop, and the changes of its configuration while it runs (active
// workers, background work). What its workers do lives in the files scheduler.hpp names.
#include "scheduler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "stack_guard.hpp"
#include "steal_order.hpp"

namespace grain::detail {

// Declared in grain/detail/task.hpp: runtime_running() reads it inline on every async.
std::atomic<scheduler*> g_instance{nullptr};

scheduler* scheduler::instance() noexcept {
  return g_instance.load(std::memory_order_acquire);
}

scheduler::scheduler(const scheduler_config& cfg, const topology& topo)
    : placement_(topo.place(cfg.pools, cfg.mapping)),
      topo_(topo),
      bind_(cfg.bind),
      stacks_(cfg.stack_size),
      fibers_(stacks_, fiber_entry) {
  configure_fences();  // before any worker touches a deque (chase_lev_deque.hpp)
  for (unsigned i = 0; i < cfg.pools.size(); ++i) {
    auto p = std::make_unique<pool>();
    p->name = cfg.pools[i].name;
    p->index = i;
    pools_.push_back(std::move(p));
  }
  stats_ = std::make_unique<worker_stats[]>(placement_.workers.size());
  for (unsigned i = 0; i < placement_.workers.size(); ++i) {
    const auto& slot = placement_.workers[i];
    auto w = std::make_unique<worker>();
    w->id = i;
    w->index = slot.pool_index;
    w->pu = slot.pu;
    w->sched = this;
    w->stats = &stats_[i];
    w->rng = 0x9E3779B97F4A7C15ull * (i + 1);
    int pi = pool_index(slot.pool);
    w->home = pools_[static_cast<unsigned>(pi)].get();
    w->home->workers.push_back(w.get());
    w->origin = w->home;
    w->origin_index = w->index;
    w->pool_now.store(w->home->index, std::memory_order_relaxed);
    w->planned_pool = w->home->index;
    workers_.push_back(std::move(w));
  }
  for (auto& p : pools_) p->active_target.store(static_cast<unsigned>(p->workers.size()));
  for (auto& w : workers_) order_victims(*w, workers_, topo_.pus());
  knobs_.define();
}

scheduler::~scheduler() = default;

int scheduler::pool_index(std::string_view name) const noexcept {
  for (auto& p : pools_)
    if (p->name == name) return static_cast<int>(p->index);
  return -1;
}

void scheduler::start() {
  scheduler* expected = nullptr;
  if (!g_instance.compare_exchange_strong(expected, this))
    throw std::logic_error("grain: a runtime is already running in this process");
  install_segv_handler();
  unread_at_start_ = unread_exceptions();
  for (auto& w : workers_) w->thread = std::thread([this, p = w.get()] { worker_main(p); });
}

void scheduler::wait_quiescent() {
  int stable = 0;
  while (stable < 2) {
    // Finished first: every finished task was spawned before, so equality means quiescence.
    std::uint64_t finished = 0;
    for (auto& w : workers_) finished += w->finished_spawned.get();
    std::uint64_t spawned = external_spawned_.load(std::memory_order_acquire);
    for (auto& w : workers_) spawned += w->spawned.get();
    if (finished == spawned && suspended.load(std::memory_order_acquire) == 0)
      ++stable;
    else
      stable = 0;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void scheduler::stop() {
  stopping_.store(true, std::memory_order_seq_cst);
  for (auto& p : pools_) {
    p->work_epoch.fetch_add(1);
    p->work_epoch.notify_all();
    p->config_epoch.fetch_add(1);
    p->config_epoch.notify_all();
  }
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
  record_fibers_left();
  uninstall_segv_handler();
  if (const auto unread = unread_exceptions() - unread_at_start_; unread > 1)
    spdlog::warn(
        "grain: {} exceptions thrown by tasks were never read (futures dropped without "
        "get())",
        unread);
  scheduler* self = this;
  g_instance.compare_exchange_strong(self, nullptr);
}

void scheduler::set_active_workers(unsigned pool_idx, unsigned n) {
  pool& p = *pools_.at(pool_idx);
  const unsigned size = static_cast<unsigned>(p.workers.size());
  if (n < 1 || n > size)
    throw std::out_of_range("grain: pool '" + p.name + "' can have 1.." + std::to_string(size) +
                            " active workers, not " + std::to_string(n));
  p.active_target.store(n, std::memory_order_release);
  p.config_epoch.fetch_add(1, std::memory_order_release);
  p.config_epoch.notify_all();
  // Workers asleep on work must look at the new target too.
  p.work_epoch.fetch_add(1, std::memory_order_release);
  p.work_epoch.notify_all();
}

int scheduler::add_background_work(unsigned pool_idx, std::function<bool()> fn) {
  pool& p = *pools_.at(pool_idx);
  int id = next_background_id_.fetch_add(1);
  std::lock_guard lock(p.background_mutex);
  p.background.emplace_back(id, std::move(fn));
  p.background_count.fetch_add(1);
  return id;
}

void scheduler::remove_background_work(int id) {
  for (auto& p : pools_) {
    std::lock_guard lock(p->background_mutex);
    auto it = std::find_if(p->background.begin(), p->background.end(),
                           [id](auto& e) { return e.first == id; });
    if (it != p->background.end()) {
      p->background.erase(it);
      p->background_count.fetch_sub(1);
    }
  }
}

void throw_no_runtime() {
  throw std::logic_error(
      "grain: no runtime is running; create one first: grain::runtime rt(argc, argv);");
}

}  // namespace grain::detail
