#include "scheduler.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "grain/clock.hpp"
#include "grain/this_task.hpp"
#include "hooks_internal.hpp"

namespace grain::detail {

namespace {

std::atomic<scheduler*> g_instance{nullptr};
thread_local worker* tls_worker = nullptr;

constexpr unsigned local_free_fibers_max = 64;
constexpr std::size_t resident_global_fibers_max = 256;
constexpr unsigned spin_rounds = 64;
constexpr unsigned yield_rounds = 16;
constexpr unsigned staged_wait_sample_mask = 63;  // time 1 task in 64 from spawn to start

inline std::uint64_t stamp() noexcept {
#if GRAIN_TIMING
  return now_ns();
#else
  return 0;
#endif
}

inline std::uint64_t xorshift(std::uint64_t& s) noexcept {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// Fold the time since the last loop event into Σt_func (seed 000, Eq. 1 and 3).
inline void account_func(worker* w, std::uint64_t ts) noexcept {
#if GRAIN_TIMING
  w->stats->func_ns.add(ts - w->last_func_ns);
  w->last_func_ns = ts;
#else
  (void)w;
  (void)ts;
#endif
}

struct fiber_waiter : waiter {
  fiber* f = nullptr;
  fiber_waiter() {
    notify_fn = [](waiter* self) noexcept {
      scheduler::instance()->make_ready(static_cast<fiber_waiter*>(self)->f);
    };
  }
};

void fiber_entry(bctx::transfer_t t);

void park_free_action(void*, fiber* from) {
  worker* w = current_worker();
  w->sched->put_free_fiber(w, from);
}

void make_ready_action(void*, fiber* from) {
  scheduler::instance()->make_ready(from);
}

}  // namespace

// Phase end for the task running on w (it suspends or yields): Σt_exec, hooks.
void end_phase_suspending(worker* w, task_base* t) {
  std::uint64_t ts = 0;
#if GRAIN_TIMING
  w->stats->phase_ending();
  ts = now_ns();
  w->stats->exec_ns.add(ts - w->phase_start_ns);
  account_func(w, ts);
  w->stats->phase_ended();
#endif
  if (auto h = g_hooks.phase_end) h(w->id, t->info, false, ts ? ts : now_ns());
}

// Switch the running task's fiber out; `action` runs on the next loop fiber.
void switch_out(worker* w, void (*action)(void*, fiber*), void* arg) {
  fiber* self = w->current;
  task_base* t = w->current_task;
  self->task = t;
  self->pool = static_cast<std::int16_t>(w->home->index);
  self->prio = t ? t->prio : priority::normal;
  fiber* next = w->sched->get_free_fiber(w);
  w->current = next;
  w->current_task = nullptr;
  switch_record rec;
  rec.action = action;
  rec.arg = arg;
  fiber_switch(self, next, rec);
}

GRAIN_NOINLINE worker* current_worker() noexcept {
  // Not inlined: a user thread can resume on another OS thread, and a caller's cached
  // thread-local address would then point at the old thread's slot.
  asm volatile("" ::: "memory");
  return tls_worker;
}

scheduler* scheduler::instance() noexcept {
  return g_instance.load(std::memory_order_acquire);
}

scheduler::scheduler(const scheduler_config& cfg, const topology& topo)
    : placement_(topo.place(cfg.pools, cfg.mapping)),
      topo_(topo),
      bind_(cfg.bind),
      stacks_(cfg.stack_size) {
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
    workers_.push_back(std::move(w));
  }
  for (auto& p : pools_) p->active_target.store(static_cast<unsigned>(p->workers.size()));
  // Victims: same pool only; same NUMA domain first (seed 003: stealing stays local).
  const auto& pus = topo_.pus();
  for (auto& w : workers_) {
    std::vector<worker*> near, far;
    for (worker* v : w->home->workers) {
      if (v == w.get()) continue;
      (pus[v->pu].numa == pus[w->pu].numa ? near : far).push_back(v);
    }
    w->victims = near;
    w->victims.insert(w->victims.end(), far.begin(), far.end());
  }
  steal_knob_ = &knobs().define_int("scheduler.steal", 0, 1, 1,
                                    "work stealing between workers of a pool (1 on, 0 off)");
}

scheduler::~scheduler() {
  for (fiber* f : all_fibers_) {
    fiber_destroy(*f);
    delete f;
  }
}

int scheduler::pool_index(std::string_view name) const noexcept {
  for (auto& p : pools_)
    if (p->name == name) return static_cast<int>(p->index);
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Fibers

fiber* scheduler::get_free_fiber(worker* w) {
  if (fiber* f = w->free_fibers) {
    w->free_fibers = f->next;
    --w->free_count;
    return f;
  }
  {
    std::lock_guard lock(global_fibers_mutex_);
    if (fiber* f = global_free_fibers_) {
      global_free_fibers_ = f->next;
      --global_free_count_;
      return f;
    }
  }
  auto* f = new fiber();
  try {
    fiber_init(*f, stacks_.allocate(), fiber_entry);
  } catch (...) {
    delete f;
    throw;
  }
  w->stats->stacks_allocated.inc();
  std::lock_guard lock(global_fibers_mutex_);
  all_fibers_.push_back(f);
  return f;
}

void scheduler::put_free_fiber(worker* w, fiber* f) noexcept {
  f->task = nullptr;
  if (w->free_count < local_free_fibers_max) {
    f->next = w->free_fibers;
    w->free_fibers = f;
    ++w->free_count;
    return;
  }
  std::lock_guard lock(global_fibers_mutex_);
  if (global_free_count_ >= resident_global_fibers_max) {
    // Keep the mapping for reuse, give the memory back: after a burst of suspended tasks the
    // resident size returns to normal. Only below the saved stack pointer: a parked loop fiber
    // is resumed later from the frames it saved above it (issue 11: releasing those made the
    // next switch to it jump to address 0).
    stack_pool::release_pages_below(f->stk, f->ctx);
  }
  f->next = global_free_fibers_;
  global_free_fibers_ = f;
  ++global_free_count_;
}

// ---------------------------------------------------------------------------------------------
// Queues and wake-ups

void scheduler::notify_work(pool& p) noexcept {
  // Pairs with the sleeper's increment of `sleepers` before its last look at the queues.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (p.sleepers.load(std::memory_order_relaxed) > 0) {
    p.work_epoch.fetch_add(1, std::memory_order_release);
    p.work_epoch.notify_one();
  }
}

void scheduler::inject_task(pool& p, task_base* t) {
  {
    std::lock_guard lock(p.inject_mutex);
    p.inject_tasks[static_cast<int>(t->prio)].push_back(t);
    p.inject_count.fetch_add(1, std::memory_order_release);
  }
  notify_work(p);
}

void scheduler::inject_fiber(pool& p, fiber* f) {
  {
    std::lock_guard lock(p.inject_mutex);
    p.inject_fibers[static_cast<int>(f->prio)].push_back(f);
    p.inject_count.fetch_add(1, std::memory_order_release);
  }
  notify_work(p);
}

void scheduler::spawn_external(task_base* t) {
  pool& p = t->pool < 0 ? default_pool() : *pools_.at(static_cast<unsigned>(t->pool));
  t->pool = static_cast<std::int16_t>(p.index);
  external_spawned_.fetch_add(1, std::memory_order_relaxed);
  inject_task(p, t);
}

void scheduler::make_ready(fiber* f) {
#if GRAIN_TIMING
  f->ready_ns = now_ns();
#endif
  worker* w = current_worker();
  if (w && w->home->index == static_cast<unsigned>(f->pool)) {
    w->pending[static_cast<int>(f->prio)].push(f);
    notify_work(*w->home);
  } else {
    inject_fiber(*pools_[static_cast<unsigned>(f->pool)], f);
  }
}

namespace {

bool pop_injected(pool& p, int prio, task_base*& t, fiber*& f) {
  if (p.inject_count.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard lock(p.inject_mutex);
  if (!p.inject_fibers[prio].empty()) {
    f = p.inject_fibers[prio].front();
    p.inject_fibers[prio].pop_front();
  } else if (!p.inject_tasks[prio].empty()) {
    t = p.inject_tasks[prio].front();
    p.inject_tasks[prio].pop_front();
  } else {
    return false;
  }
  p.inject_count.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

bool pop_local(worker* w, int prio, task_base*& t, fiber*& f) {
  worker_stats& s = *w->stats;
  s.pending_accesses.inc();
  if ((f = w->pending[prio].pop())) return true;
  s.pending_misses.inc();
  s.staged_accesses.inc();
  if ((t = w->staged[prio].pop())) return true;
  s.staged_misses.inc();
  return false;
}

bool steal(worker* w, int prio_lo, int prio_hi, task_base*& t, fiber*& f) {
  const auto n = w->victims.size();
  if (n == 0) return false;
  // Random start inside the near (same NUMA) group would need its size; a random rotation of
  // the whole list keeps near victims first in expectation and costs nothing.
  std::size_t start = xorshift(w->rng) % n;
  for (int prio = prio_lo; prio <= prio_hi; ++prio) {
    for (std::size_t k = 0; k < n; ++k) {
      worker* v = w->victims[(start + k) % n];
      if ((f = v->pending[prio].steal()) || (t = v->staged[prio].steal())) {
        w->stats->stolen_to.inc();
        v->stats->stolen_from.v.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    }
  }
  return false;
}

// Lookup order (DESIGN.md, seed 000 Priority Local-FIFO): own high, own normal (pending, then
// staged), the pool's injection queue, steal high/normal (same NUMA first), then low.
bool find_work(worker* w, task_base*& t, fiber*& f) {
  t = nullptr;
  f = nullptr;
  if (pop_local(w, 0, t, f) || pop_local(w, 1, t, f)) return true;
  pool& p = *w->home;
  if (pop_injected(p, 0, t, f) || pop_injected(p, 1, t, f)) return true;
  const bool can_steal = w->sched->steal_enabled();
  if (can_steal && steal(w, 0, 1, t, f)) return true;
  if (pop_local(w, 2, t, f) || pop_injected(p, 2, t, f)) return true;
  return can_steal && steal(w, 2, 2, t, f);
}

bool pool_has_queued_work(pool& p) noexcept {
  if (p.inject_count.load(std::memory_order_relaxed) > 0) return true;
  for (worker* v : p.workers)
    for (int i = 0; i < num_priorities; ++i)
      if (!v->staged[i].empty() || !v->pending[i].empty()) return true;
  return false;
}

bool run_background(worker* w) {
  pool& p = *w->home;
  if (p.background_count.load(std::memory_order_relaxed) == 0) return false;
  std::uint64_t t0 = now_ns();
  bool did = false;
  {
    std::lock_guard lock(p.background_mutex);
    for (auto& [id, fn] : p.background) did = fn() || did;
  }
  w->stats->background_ns.add(now_ns() - t0);
  return did;
}

// A phase the loop starts (a new task or a resumed user thread): the loop's time up to here,
// how long what it starts waited in its queue (staged or pending), the phase count, the hook.
inline void begin_phase(worker* w, const task_info& info, std::uint64_t queued_ns,
                        stat_counter& wait_ns, stat_counter& wait_count) noexcept {
  std::uint64_t ts = 0;
#if GRAIN_TIMING
  ts = now_ns();
  account_func(w, ts);
  w->phase_start_ns = ts;
  w->stats->phase_begun(ts);
  if (queued_ns) {
    wait_ns.add(ts - queued_ns);
    wait_count.inc();
  }
#else
  (void)queued_ns;
  (void)wait_ns;
  (void)wait_count;
#endif
  w->stats->phases.inc();
  if (auto h = g_hooks.phase_begin) h(w->id, info, ts ? ts : now_ns());
}

void run_task(worker* w, task_base* t, bool from_queue) {
  const task_info info = t->info;  // t may be gone once it ran
  w->current_task = t;
#if GRAIN_TIMING
  t->timed_phase = true;
#endif
  begin_phase(w, info, t->created_ns, w->stats->staged_wait_ns, w->stats->staged_wait_count);
  t->run();
  w = current_worker();  // the task may have suspended and resumed elsewhere
  w->current_task = nullptr;
  w->stats->tasks.inc();
  if (from_queue) w->finished_spawned.inc();
  std::uint64_t ts = 0;
#if GRAIN_TIMING
  // The phase ends where the callable returned (mark_callable_end); publishing the result and
  // waking its waiters count as the loop's time. A mark older than the phase is another task's.
  w->stats->phase_ending();
  ts = w->callable_end_ns;
  if (ts < w->phase_start_ns) ts = now_ns();
  w->stats->exec_ns.add(ts - w->phase_start_ns);
  account_func(w, ts);
  w->stats->phase_ended();
#endif
  if (auto h = g_hooks.phase_end) h(w->id, info, true, ts ? ts : now_ns());
}

void resume_fiber(worker* w, fiber* f) {
  w->current_task = f->task;
  begin_phase(w, f->task->info, f->ready_ns, w->stats->pending_wait_ns,
              w->stats->pending_wait_count);
  w->sched->suspended.fetch_sub(1, std::memory_order_relaxed);
  fiber* self = w->current;
  w->current = f;
  switch_record rec;
  rec.action = park_free_action;
  fiber_switch(self, f, rec);
  // Resumed as a free loop fiber: back to the loop.
}

void deactivate(worker* w) {
  pool& p = *w->home;
  std::uint64_t ts = now_ns();
  account_func(w, ts);
  w->stats->idle_ns.add(ts - w->stats->idle_since_ns.get());
  w->stats->idle_since_ns.set(0);
  for (;;) {
    std::uint32_t e = p.config_epoch.load(std::memory_order_acquire);
    if (w->index < p.active_target.load(std::memory_order_acquire) ||
        w->sched->stopping().load(std::memory_order_acquire))
      break;
    p.config_epoch.wait(e, std::memory_order_acquire);
  }
  ts = now_ns();
  w->last_func_ns = ts;
  w->stats->idle_since_ns.set(ts);
}

// Look for work until some is found (true) or the runtime stops (false).
bool idle_wait(worker* w, task_base*& t, fiber*& f) {
  std::uint64_t idle_start = now_ns();
  account_func(w, idle_start);
  w->stats->idle_since_ns.set(idle_start);
  if (auto h = g_hooks.idle_begin) h(w->id, idle_start);
  pool& p = *w->home;
  scheduler& s = *w->sched;
  bool found = false;
  for (unsigned round = 0;; ++round) {
    if (s.stopping().load(std::memory_order_acquire)) break;
    if (w->index >= p.active_target.load(std::memory_order_acquire)) {
      deactivate(w);
      idle_start = w->stats->idle_since_ns.get();
      round = 0;
      continue;
    }
    if (find_work(w, t, f)) {
      found = true;
      break;
    }
    if (run_background(w)) {
      round = 0;
      continue;
    }
    if (round < spin_rounds) {
      for (int i = 0; i < 32; ++i) __builtin_ia32_pause();
      continue;
    }
    if (round < spin_rounds + yield_rounds) {
      std::this_thread::yield();
      continue;
    }
    p.sleepers.fetch_add(1, std::memory_order_seq_cst);
    std::uint32_t e = p.work_epoch.load(std::memory_order_seq_cst);
    if (find_work(w, t, f)) {
      p.sleepers.fetch_sub(1, std::memory_order_relaxed);
      found = true;
      break;
    }
    if (!s.stopping().load(std::memory_order_acquire) &&
        w->index < p.active_target.load(std::memory_order_acquire)) {
      w->stats->sleeps.inc();
      p.work_epoch.wait(e, std::memory_order_acquire);
    }
    p.sleepers.fetch_sub(1, std::memory_order_relaxed);
    round = 0;
  }
  std::uint64_t ts = now_ns();
  w->stats->idle_ns.add(ts - idle_start);
  w->stats->idle_since_ns.set(0);
  account_func(w, ts);
  if (auto h = g_hooks.idle_end) h(w->id, ts);
  // Chain wake-up: a woken worker that found work wakes the next sleeper if more is queued.
  if (found && p.sleepers.load(std::memory_order_relaxed) > 0 && pool_has_queued_work(p))
    s.notify_work(p);
  return found;
}

void fiber_entry(bctx::transfer_t tr) {
  fiber_arrived(tr);
  worker_loop();
  // Shutdown: back to the worker's OS-thread context, never to return.
  worker* w = current_worker();
  fiber* self = w->current;
  w->current = &w->thread_fiber;
  switch_record rec;
  fiber_switch(self, &w->thread_fiber, rec);
  std::abort();  // unreachable
}

// ---------------------------------------------------------------------------------------------
// Stack overflow: guard page hit while running a user thread.

struct sigaction g_old_segv;
std::atomic<int> g_segv_installs{0};

// A fault is an overflow of the running user thread's stack when it lies in the stack's guard
// region, or when the stack pointer itself has left the stack downwards (a frame larger than
// the guard jumped over it into other memory).
bool is_stack_overflow(const stack& stk, const void* addr, const void* uctx) noexcept {
  if (!stk.guard) return false;
  if (stk.in_guard(addr)) return true;
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(uctx);
  const auto sp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  const auto base = reinterpret_cast<std::uintptr_t>(stk.base);
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  return sp < base + stack_pool::page_size() && a < base && base - a < (std::uintptr_t{64} << 20);
#else
  (void)uctx;
  return false;
#endif
}

void segv_handler(int sig, siginfo_t* si, void* uctx) {
  worker* w = tls_worker;
  if (w && w->current && is_stack_overflow(w->current->stk, si->si_addr, uctx)) {
    const char* name =
        w->current_task && w->current_task->info.name ? w->current_task->info.name : "?";
    const std::size_t size = w->current->stk.size;
    char buf[512];
    int n = size >= stack_pool::max_stack_size
                ? std::snprintf(buf, sizeof buf,
                                "grain: stack overflow in task '%s' on worker %u: the stack is "
                                "at the maximum --grain:stack-size (%zu bytes), so the "
                                "recursion is unbounded or must become a loop or tasks\n",
                                name, w->id, size)
                : std::snprintf(buf, sizeof buf,
                                "grain: stack overflow in task '%s' on worker %u (stack size %zu "
                                "bytes; raise --grain:stack-size, at most 256M)\n",
                                name, w->id, size);
    if (n > 0) {
      ssize_t r = ::write(2, buf, static_cast<std::size_t>(std::min(n, 511)));
      (void)r;
    }
    ::signal(SIGSEGV, SIG_DFL);
    return;  // re-faults with the default action
  }
  // Not a guard page of ours: behave as if we were not here.
  if (g_old_segv.sa_flags & SA_SIGINFO) {
    if (g_old_segv.sa_sigaction) {
      g_old_segv.sa_sigaction(sig, si, uctx);
      return;
    }
  } else if (g_old_segv.sa_handler != SIG_DFL && g_old_segv.sa_handler != SIG_IGN) {
    g_old_segv.sa_handler(sig);
    return;
  }
  ::signal(SIGSEGV, SIG_DFL);
}

void install_segv_handler() {
  if (g_segv_installs.fetch_add(1) != 0) return;
  struct sigaction sa {};
  sa.sa_sigaction = segv_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGSEGV, &sa, &g_old_segv);
}

void uninstall_segv_handler() {
  if (g_segv_installs.fetch_sub(1) != 1) return;
  ::sigaction(SIGSEGV, &g_old_segv, nullptr);
}

}  // namespace

void worker_loop() {
  for (;;) {
    worker* w = current_worker();
    task_base* t = w->run_next;
    fiber* f = nullptr;
    if (t) {
      w->run_next = nullptr;
      run_task(w, t, false);
      continue;
    }
    // A worker above its pool's active count takes no new work (elastic pools).
    const bool active = w->index < w->home->active_target.load(std::memory_order_relaxed);
    if (!(active && find_work(w, t, f)) && !idle_wait(w, t, f)) return;
    if (t)
      run_task(w, t, true);
    else
      resume_fiber(w, f);
  }
}

void scheduler::worker_main(worker* w) {
  tls_worker = w;
  if (bind_) topo_.bind_this_thread(w->pu);
  // An alternate signal stack, so a stack overflow can be reported.
  stack_t ss{};
  ss.ss_size = 64 * 1024;
  ss.ss_sp =
      ::mmap(nullptr, ss.ss_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ss.ss_sp != MAP_FAILED) ::sigaltstack(&ss, nullptr);
  fiber_init_thread(w->thread_fiber);
  if (auto h = g_hooks.worker_start) h(w->id);
  w->last_func_ns = now_ns();
  fiber* first = get_free_fiber(w);
  w->current = first;
  switch_record rec;
  fiber_switch(&w->thread_fiber, first, rec);
  // Shutdown.
  if (auto h = g_hooks.worker_stop) h(w->id);
  if (ss.ss_sp != MAP_FAILED) {
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
    ::munmap(ss.ss_sp, ss.ss_size);
  }
  tls_worker = nullptr;
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

// ---------------------------------------------------------------------------------------------
// The detail:: entry points of the public API.

void spawn(task_base* t) {
  worker* w = current_worker();
  if (GRAIN_LIKELY(w != nullptr) &&
      (t->pool < 0 || static_cast<unsigned>(t->pool) == w->home->index)) {
    t->pool = static_cast<std::int16_t>(w->home->index);
#if GRAIN_TIMING
    if ((++w->spawn_counter & staged_wait_sample_mask) == 0) t->created_ns = now_ns();
#endif
    w->spawned.inc();  // before the push: a thief may finish it at once
    w->staged[static_cast<int>(t->prio)].push(t);
    w->sched->notify_work(*w->home);
    return;
  }
  scheduler* s = scheduler::instance();
  if (!s) throw_no_runtime();
  s->spawn_external(t);
}

namespace {
void run_inline_on(worker* w, task_base* t, bool from_queue) {
  const task_info info = t->info;
  task_base* saved = w->current_task;
  w->current_task = t;
  w->stats->phases.inc();
  if (auto h = g_hooks.phase_begin) h(w->id, info, now_ns());
  t->run();
  w = current_worker();
  w->current_task = saved;
  w->stats->tasks.inc();
  w->stats->inline_tasks.inc();
  if (from_queue) w->finished_spawned.inc();
  if (auto h = g_hooks.phase_end) h(w->id, info, true, now_ns());
}
}  // namespace

bool try_run_inline(task_base* t) {
  worker* w = current_worker();
  if (!w) return false;
  const std::uint64_t parent = t->info.parent_guid;
  const int prio = static_cast<int>(t->prio);
  // A parent that spawned several children and waits for the first one (skynet, UTS, any
  // "spawn all, then join in order") finds its younger children above it at the bottom of
  // its queue. It runs them first, as it would after the first one anyway, and stops at the
  // first task that is not a sibling: it never runs unrelated work while it waits.
  for (;;) {
    // Running a task on this stack nests its frames on ours: keep a reserve, and suspend
    // instead when the stack is getting deep (a chain of 10,000 waits must not overflow).
    const char probe = 0;
    const fiber* f = w->current;
    if (f->stk.base && static_cast<std::size_t>(&probe - f->stk.base) < f->stk.size / 4 + 8192)
      return false;
    auto& q = w->staged[prio];
    task_base* p = q.pop();
    if (!p) return false;  // t was stolen, or is not in this worker's queue
    if (p == t) {
      run_inline_on(w, t, true);
      return true;
    }
    if (parent == 0 || p->info.parent_guid != parent) {
      q.push(p);  // the owner may push back what it popped
      return false;
    }
    run_inline_on(w, p, true);
    w = current_worker();  // p may have suspended, and this chain resumed on another worker
  }
}

void run_inline(task_base* t) {
  worker* w = current_worker();
  if (w)
    run_inline_on(w, t, false);
  else
    t->run();
}

void fork_run(task_base* t) {
  worker* w = current_worker();
  if (!w || !w->current_task) {
    run_inline(t);
    return;
  }
  // The child runs first on a fresh loop fiber; the parent waits in the pending queue, where
  // it is the next thing this worker resumes — unless another worker steals it first.
  end_phase_suspending(w, w->current_task);
  t->pool = static_cast<std::int16_t>(w->home->index);
  w->run_next = t;
  w->sched->suspended.fetch_add(1, std::memory_order_relaxed);
  switch_out(w, make_ready_action, nullptr);
}

void mark_callable_end() noexcept {
#if GRAIN_TIMING
  if (worker* w = current_worker()) w->callable_end_ns = now_ns();
#endif
}

std::uint64_t next_guid() noexcept {
  if (worker* w = current_worker())
    return (static_cast<std::uint64_t>(w->id + 1) << 40) | ++w->guid_counter;
  static std::atomic<std::uint64_t> external{0};
  return (0xFFFFFull << 40) | (external.fetch_add(1, std::memory_order_relaxed) + 1);
}

std::uint64_t current_guid() noexcept {
  worker* w = current_worker();
  return w && w->current_task ? w->current_task->info.guid : 0;
}

bool runtime_running() noexcept {
  return scheduler::instance() != nullptr;
}

void throw_no_runtime() {
  throw std::logic_error(
      "grain: no runtime is running; create one first: grain::runtime rt(argc, argv);");
}

// ---------------------------------------------------------------------------------------------
// park / park_until

namespace {

struct thread_waiter : waiter {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  thread_waiter() {
    notify_fn = [](waiter* self) noexcept {
      auto* tw = static_cast<thread_waiter*>(self);
      std::lock_guard lock(tw->m);
      tw->done = true;
      tw->cv.notify_one();
    };
  }
};

struct park_args {
  enqueue_fn enqueue;
  void* ctx;
  fiber_waiter* node;
};

void park_action(void* a, fiber* from) {
  auto* p = static_cast<park_args*>(a);
  p->node->f = from;
  if (!p->enqueue(p->ctx, p->node)) scheduler::instance()->make_ready(from);
}

struct timed_park : timer_entry {
  enqueue_fn enqueue;
  dequeue_fn dequeue;
  void* ctx;
  fiber_waiter node;
  scheduler* sched;
};

void timed_park_action(void* a, fiber* from) {
  auto* p = static_cast<timed_park*>(a);
  p->node.f = from;
  std::unique_lock lock(p->sched->timers().mutex());
  if (!p->enqueue(p->ctx, &p->node)) {
    lock.unlock();
    p->sched->make_ready(from);
    return;
  }
  p->sched->timers().arm_locked(p);
}

void timed_park_fire(timer_entry* e) {
  auto* p = static_cast<timed_park*>(e);
  if (p->dequeue(p->ctx, &p->node)) {
    p->node.f->timed_out = true;
    p->sched->make_ready(p->node.f);
  }
}

}  // namespace

void park(enqueue_fn enqueue, void* ctx) {
  worker* w = current_worker();
  if (!w || !w->current_task) {
    thread_waiter node;
    if (!enqueue(ctx, &node)) return;
    std::unique_lock lock(node.m);
    node.cv.wait(lock, [&] { return node.done; });
    return;
  }
  end_phase_suspending(w, w->current_task);
  w->stats->suspensions.inc();
  w->sched->suspended.fetch_add(1, std::memory_order_relaxed);
  fiber_waiter node;
  park_args args{enqueue, ctx, &node};
  switch_out(w, park_action, &args);
}

bool park_until(enqueue_fn enqueue, dequeue_fn dequeue, void* ctx, std::uint64_t deadline_ns) {
  worker* w = current_worker();
  if (!w || !w->current_task) {
    thread_waiter node;
    if (!enqueue(ctx, &node)) return true;
    std::unique_lock lock(node.m);
    auto tp = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns));
    if (node.cv.wait_until(lock, tp, [&] { return node.done; })) return true;
    lock.unlock();
    if (dequeue(ctx, &node)) return false;
    lock.lock();  // a notification is on its way
    node.cv.wait(lock, [&] { return node.done; });
    return true;
  }
  scheduler* s = w->sched;
  end_phase_suspending(w, w->current_task);
  w->stats->suspensions.inc();
  s->suspended.fetch_add(1, std::memory_order_relaxed);
  timed_park tp;
  tp.deadline_ns = deadline_ns;
  tp.fire = timed_park_fire;
  tp.enqueue = enqueue;
  tp.dequeue = dequeue;
  tp.ctx = ctx;
  tp.sched = s;
  fiber* self = w->current;
  self->timed_out = false;
  switch_out(w, timed_park_action, &tp);
  s->timers().cancel(&tp);  // also waits out a firing in progress
  return !self->timed_out;
}

std::uint64_t deadline_from(std::chrono::steady_clock::time_point tp) noexcept {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(tp.time_since_epoch()).count();
  return ns < 0 ? 0 : static_cast<std::uint64_t>(ns);
}

}  // namespace grain::detail

// ---------------------------------------------------------------------------------------------
// this_task

namespace grain::this_task {

void yield() {
  using namespace detail;
  worker* w = current_worker();
  if (!w || !w->current_task) {
    std::this_thread::yield();
    return;
  }
  // Through the pool's FIFO injection queue: this worker's own queued work runs first.
  end_phase_suspending(w, w->current_task);
  w->sched->suspended.fetch_add(1, std::memory_order_relaxed);
  switch_out(
      w,
      [](void*, fiber* from) {
#if GRAIN_TIMING
        from->ready_ns = now_ns();
#endif
        scheduler* s = scheduler::instance();
        s->inject_fiber(s->pool_at(static_cast<unsigned>(from->pool)), from);
      },
      nullptr);
}

void sleep_until_ns(std::uint64_t deadline_ns) {
  auto registered = [](detail::waiter*) noexcept { return true; };
  auto removed = [](detail::waiter*) noexcept { return true; };
  while (now_ns() < deadline_ns) (void)detail::park_until(registered, removed, deadline_ns);
}

int worker_index() noexcept {
  detail::worker* w = detail::current_worker();
  return w ? static_cast<int>(w->id) : -1;
}

}  // namespace grain::this_task
