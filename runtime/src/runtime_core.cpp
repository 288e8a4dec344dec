// runtime_core's life: start (options, topology, scheduler, extensions), stop, and what it
// answers while it runs. Its options are core_options.cpp's; its signals signal_handling.cpp's.
#include "grain/ext/runtime_core.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <optional>

#include "adaptive_inlining.hpp"
#include "asymmetric_fence.hpp"
#include "core_options.hpp"
#include "critical_auto.hpp"
#include "grain/clock.hpp"
#include "scheduler.hpp"
#include "scheduler_knobs.hpp"
#include "signal_handling.hpp"

namespace grain {
namespace {

std::atomic<runtime_core*> g_current{nullptr};

}  // namespace

runtime_core::runtime_core(int& argc, char** argv, std::vector<std::unique_ptr<extension>> exts) {
  opts_.parse(argc, argv, detail::all_option_specs(exts));
  start(std::move(exts));
}

runtime_core::runtime_core(const std::vector<std::string>& args,
                           std::vector<std::unique_ptr<extension>> exts, bool use_environment) {
  opts_.parse(args, detail::all_option_specs(exts), use_environment);
  start(std::move(exts));
}

void runtime_core::undo_start() {
  for (auto it = started_.rbegin(); it != started_.rend(); ++it) {
    try {
      (*it)->stop(*this);
    } catch (...) {
    }
  }
  started_.clear();
  detail::stop_critical_auto();
  detail::stop_inlining();
  g_current.store(nullptr);
}

void runtime_core::start(std::vector<std::unique_ptr<extension>> exts) {
  if (opts_.has("help")) {
    std::printf("grain %s options (each also as the environment variable in brackets):\n%s",
                options::version(), options::usage(detail::all_option_specs(exts)).c_str());
    std::fflush(stdout);
    throw startup_exit{0};
  }
  if (opts_.has("version")) {
    std::printf("grain %s\nbuilt with: %s\n", options::version(), GRAIN_BUILT_WITH);
    std::fflush(stdout);
    throw startup_exit{0};
  }
  detail::enable_tsc_clock();  // once per process; the runtime's timestamps start here
  start_ns_ = now_ns();
  std::string level = opts_.get("log-level", "warn");
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off")
    throw option_error("--grain:log-level=" + level +
                       ": use trace, debug, info, warn, error, critical or off");
  spdlog::set_level(lvl);

  topo_ = std::make_unique<topology>(topology::load(
      opts_.has("ignore-process-mask") ? process_binding::ignore : process_binding::honour));
  const unsigned threads = detail::checked_threads(opts_, *topo_);
  detail::scheduler_config cfg;
  cfg.pools = detail::parse_pools(opts_.get("pools", ""), threads);
  std::string bind = opts_.get("bind", "balanced");
  if (bind == "none") {
    cfg.bind = false;
  } else {
    try {
      cfg.mapping = parse_thread_mapping(bind);
      // A mapping this topology cannot give (a NUMA one without hwloc) is the option's error.
      (void)topo_->place(cfg.pools, cfg.mapping);
    } catch (const std::invalid_argument& e) {
      throw option_error(std::string("--grain:bind: ") + e.what());
    }
  }
  if (opts_.has("stack-size")) cfg.stack_size = detail::parse_stack_size(opts_.get("stack-size"));
  std::optional<detail::fence_mode> fences;  // none: the environment's or adaptive
  if (opts_.has("fences")) {
    const std::string text = opts_.get("fences");
    if (!detail::parse_fence_mode(text.c_str(), fences.emplace()))
      throw option_error("--grain:fences=" + text + ": use adaptive, symmetric or asymmetric");
  }
  detail::request_fence_mode(fences);

  if (runtime_core* expected = nullptr; !g_current.compare_exchange_strong(expected, this))
    throw std::logic_error("grain: a runtime is already running in this process");
  try {
    detail::start_inlining(opts_, *topo_, cfg.stack_size);  // before any scheduler exists
    sched_ = std::make_unique<detail::scheduler>(cfg, *topo_);
    detail::start_critical_auto(opts_, *sched_);  // before workers spawn anything
    for (unsigned p = 0; p < sched_->num_pools(); ++p) {
      auto& pool = sched_->pool_at(p);
      detail::define_pool_workers_knob(pool).on_change([this, p](double, double v) {
        if (runtime_core::current() == this)
          sched_->set_active_workers(p, static_cast<unsigned>(v));
      });
      if (&pool != &sched_->default_pool())
        detail::define_pool_share_knob(pool, sched_->default_pool())
            .on_change([this, p](double, double v) {
              if (runtime_core::current() == this)
                sched_->set_pool_share(p, static_cast<unsigned>(v));
            });
      pool_info info;
      info.name = pool.name;
      for (auto* w : pool.workers) info.workers.push_back(w->id);
      pool_infos_.push_back(std::move(info));
    }
    extensions_ = std::move(exts);
    for (auto& e : extensions_) e->configure(opts_, *this);
    for (auto& e : extensions_) {
      e->start(*this);
      started_.push_back(e.get());
    }
    sched_->start();
  } catch (const startup_exit&) {  // --help, --grain:list-counters: not a failure
    undo_start();
    throw;
  } catch (...) {
    for (auto& e : extensions_) e->start_failed(*this);
    for (auto& e : exts) e->start_failed(*this);  // still here if configure was not reached
    undo_start();
    throw;
  }
  detail::install_signal_handling();
  spdlog::debug("grain: {} workers in {} pools on {}", threads, cfg.pools.size(),
                topo_->describe());
}

runtime_core::~runtime_core() {
  try {
    stop();
  } catch (const std::exception& e) {
    spdlog::error("grain: error while stopping the runtime: {}", e.what());
  }
}

runtime_core* runtime_core::current() noexcept {
  return g_current.load(std::memory_order_acquire);
}

void runtime_core::stop() {
  if (stopped_ || !sched_) return;
  stopped_ = true;
  sched_->wait_quiescent();
  std::exception_ptr first;
  for (extension* e : started_) {
    try {
      e->quiesce(*this);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  sched_->wait_quiescent();
  for (auto it = started_.rbegin(); it != started_.rend(); ++it) {
    try {
      (*it)->stop(*this);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  // Nothing is left to flush; and the scheduler's SIGSEGV handler, which ours chains to, goes
  // away with the scheduler.
  detail::uninstall_signal_handling();
  sched_->wait_quiescent();
  sched_->stop();
  detail::stop_critical_auto();
  detail::stop_inlining();
  g_current.store(nullptr, std::memory_order_release);
  if (first) std::rethrow_exception(first);
}

void runtime_core::wait_quiescent() {
  sched_->wait_quiescent();
}

unsigned runtime_core::num_workers() const noexcept {
  return sched_->num_workers();
}

const std::vector<pool_info>& runtime_core::pools() const noexcept {
  return pool_infos_;
}

unsigned runtime_core::pool_of(unsigned worker) const noexcept {
  return sched_->worker_at(worker).pool_now.load(std::memory_order_relaxed);
}

int runtime_core::pool_index(std::string_view name) const noexcept {
  return sched_->pool_index(name);
}

worker_stats& runtime_core::stats(unsigned worker) noexcept {
  return sched_->stats(worker);
}

std::size_t runtime_core::queue_length(unsigned worker, queue_kind kind) const noexcept {
  auto& w = sched_->worker_at(worker);
  std::size_t n = 0;
  for (int p = 0; p < detail::num_priorities; ++p)
    n += kind == queue_kind::staged ? w.staged[p].size() : w.pending[p].size();
  return n;
}

unsigned runtime_core::active_workers(unsigned pool) const noexcept {
  return sched_->pool_at(pool).active_target.load(std::memory_order_relaxed);
}

void runtime_core::set_active_workers(unsigned pool, unsigned n) {
  auto& p = sched_->pool_at(pool);
  if (p.workers_knob) {
    if (n < 1 || n > p.workers.size())
      throw std::out_of_range("grain: pool '" + p.name + "' can have 1.." +
                              std::to_string(p.workers.size()) + " active workers, not " +
                              std::to_string(n));
    p.workers_knob->set(static_cast<double>(n), "set_active_workers", "api");
  } else {
    sched_->set_active_workers(pool, n);
  }
}

int runtime_core::bound_pu(unsigned worker) const noexcept {
  if (!topo_->is_this_machine() || !sched_) return -1;
  return static_cast<int>(topo_->pus()[sched_->worker_at(worker).pu].os_index);
}

const topology& runtime_core::machine() const noexcept {
  return *topo_;
}
const placement& runtime_core::worker_placement() const noexcept {
  return sched_->worker_placement();
}
const options& runtime_core::opts() const noexcept {
  return opts_;
}
std::uint64_t runtime_core::start_time_ns() const noexcept {
  return start_ns_;
}

std::vector<extension*> runtime_core::extensions() const {
  return started_;
}

int runtime_core::add_background_work(unsigned pool, std::function<bool()> fn) {
  return sched_->add_background_work(pool, std::move(fn));
}
void runtime_core::remove_background_work(int id) {
  sched_->remove_background_work(id);
}

}  // namespace grain
