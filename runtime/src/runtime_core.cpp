#include "grain/ext/runtime_core.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "adaptive_inlining.hpp"
#include "asymmetric_fence.hpp"
#include "critical_auto.hpp"
#include "grain/clock.hpp"
#include "scheduler.hpp"
#include "scheduler_knobs.hpp"

namespace grain {
namespace {

constexpr long long oversubscription_limit = 4;

std::atomic<runtime_core*> g_current{nullptr};

// ---- Signals and std::terminate: let extensions flush (complete traces, the summary), then
// die the way the process would have died without us.
//
// SIGINT/SIGTERM: the handler writes the signal to a pipe; the signal thread runs the
// extensions' emergency_stop (locks, files: not signal-safe), puts the dispositions back and
// raises the signal again. A signal the process inherited as ignored (a background job of a
// non-interactive shell) is left ignored: there is nothing to flush "before exiting".
//
// Crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): the crashing thread cannot flush, since
// it may hold any lock; it hands the work to the signal thread and waits (bounded: the flush
// may need a lock the crashed thread holds) before passing the signal on to the handler that
// was there before ours (the scheduler's stack-overflow report, or the default action).
constexpr int stop_signals[] = {SIGINT, SIGTERM};
constexpr int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int crash_flag = 0x80;  // in the pipe byte: the sender waits for done_pipe
constexpr int crash_wait_ms = 30'000;

int g_signal_pipe[2] = {-1, -1};
int g_done_pipe[2] = {-1, -1};
struct sigaction g_old[NSIG];
std::atomic<bool> g_ours[NSIG];  // the signal thread and stop() may both restore
// A pointer, not a std::thread object: std::exit with a running runtime destroys static
// objects, and a joinable std::thread's destructor calls std::terminate.
std::thread* g_signal_thread = nullptr;
std::atomic<bool> g_emergency_begun{false};
std::terminate_handler g_old_terminate = nullptr;
std::once_flag g_emergency_once;

void on_signal(int sig);
void on_crash(int sig, siginfo_t* si, void*);

void emergency(runtime_core* rt) {
  if (!rt) return;
  g_emergency_begun.store(true);
  std::call_once(g_emergency_once, [rt] {
    auto exts = rt->extensions();
    for (auto it = exts.rbegin(); it != exts.rend(); ++it) {
      try {
        (*it)->emergency_stop(*rt);
      } catch (...) {
      }
    }
  });
}

// Put back the dispositions we replaced, unless someone replaced ours in the meantime.
void restore_signal(int sig) {
  if (!g_ours[sig].exchange(false)) return;
  struct sigaction cur {};
  ::sigaction(sig, nullptr, &cur);
  const bool ours =
      (cur.sa_flags & SA_SIGINFO) ? cur.sa_sigaction == on_crash : cur.sa_handler == on_signal;
  if (ours) ::sigaction(sig, &g_old[sig], nullptr);
}

void restore_all_signals() {
  for (int sig : stop_signals) restore_signal(sig);
  for (int sig : crash_signals) restore_signal(sig);
}

void on_signal(int sig) {
  unsigned char b = static_cast<unsigned char>(sig);
  ssize_t r = ::write(g_signal_pipe[1], &b, 1);
  (void)r;
}

void on_crash(int sig, siginfo_t* si, void*) {
  const int saved_errno = errno;
  // Only the first crash waits for the flush; a crash during the flush (in the signal thread,
  // or a second worker) goes straight on, so nothing waits for itself.
  if (!g_emergency_begun.exchange(true) && g_signal_pipe[1] >= 0) {
    unsigned char b = static_cast<unsigned char>(sig | crash_flag);
    if (::write(g_signal_pipe[1], &b, 1) == 1) {
      pollfd p{g_done_pipe[0], POLLIN, 0};
      while (::poll(&p, 1, crash_wait_ms) < 0 && errno == EINTR) {
      }
    }
  }
  // Pass it on: a fault re-faults on return and reaches the previous handler; a sent signal
  // (kill, raise, abort) is raised again and delivered once this handler returns.
  ::sigaction(sig, &g_old[sig], nullptr);
  if (si && si->si_code <= 0) ::raise(sig);
  errno = saved_errno;
}

// std::exit (or a return from main) while a runtime still runs: nothing will stop it in order
// (stopping waits for every task, and exit may have been called from one), so the extensions
// write what they recorded, as on a signal, and the process ends with the status given to
// exit. The workers are left as they are: exit ends them.
void on_exit_while_running() {
  runtime_core* rt = g_current.load();
  if (!rt || g_emergency_begun.load()) return;
  std::fprintf(stderr, "grain: exit() while the runtime runs: writing what was recorded\n");
  emergency(rt);
}

void on_terminate() {
  emergency(g_current.load());
  if (g_old_terminate) g_old_terminate();
  std::abort();
}

void signal_thread_main() {
  for (;;) {
    unsigned char b = 0;
    ssize_t r = ::read(g_signal_pipe[0], &b, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || b == 0) return;  // 0: the runtime is stopping
    const int sig = b & ~crash_flag;
    if (b & crash_flag)
      std::fprintf(stderr, "grain: fatal signal %d (%s): writing what was recorded\n", sig,
                   ::strsignal(sig));
    g_emergency_begun.store(true);
    emergency(g_current.load());
    // Nobody reads the pipe from now on: every signal gets its old disposition back, so a
    // second SIGINT/SIGTERM is not swallowed.
    restore_all_signals();
    if (b & crash_flag) {
      unsigned char done = 1;
      ssize_t w = ::write(g_done_pipe[1], &done, 1);
      (void)w;
    } else {
      ::raise(sig);
    }
    return;
  }
}

void install(int sig, const struct sigaction& sa) {
  struct sigaction old {};
  ::sigaction(sig, nullptr, &old);
  if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) return;
  ::sigaction(sig, &sa, &g_old[sig]);
  g_ours[sig].store(true);
}

void install_signal_handling() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) return;
  if (::pipe2(g_done_pipe, O_CLOEXEC) != 0) {
    ::close(g_signal_pipe[0]);
    ::close(g_signal_pipe[1]);
    g_signal_pipe[0] = g_signal_pipe[1] = -1;
    return;
  }
  g_emergency_begun.store(false);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : stop_signals) install(sig, sa);
  struct sigaction crash {};
  crash.sa_sigaction = on_crash;
  crash.sa_flags = SA_SIGINFO | SA_ONSTACK;  // workers have an alternate stack
  sigemptyset(&crash.sa_mask);
  for (int sig : crash_signals) install(sig, crash);
  g_signal_thread = new std::thread(signal_thread_main);
  g_old_terminate = std::set_terminate(on_terminate);
  static std::once_flag exit_handler;
  std::call_once(exit_handler, [] { std::atexit(on_exit_while_running); });
}

void uninstall_signal_handling() {
  if (g_signal_pipe[1] < 0) return;
  restore_all_signals();
  unsigned char zero = 0;
  ssize_t r = ::write(g_signal_pipe[1], &zero, 1);
  (void)r;
  if (g_signal_thread) {
    g_signal_thread->join();
    delete g_signal_thread;
    g_signal_thread = nullptr;
  }
  for (int* p : {g_signal_pipe, g_done_pipe}) {
    ::close(p[0]);
    ::close(p[1]);
    p[0] = p[1] = -1;
  }
  std::set_terminate(g_old_terminate);
}

constexpr std::size_t min_stack_size = std::size_t{16} << 10;
constexpr std::size_t max_stack_size = std::size_t{256} << 20;

std::size_t parse_size(const std::string& text) {
  std::size_t value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || p == text.data())
    throw option_error("--grain:stack-size=" + text + ": not a size (examples: 65536, 64K, 1M)");
  std::string_view rest(p, static_cast<std::size_t>(text.data() + text.size() - p));
  unsigned shift = 0;
  if (rest == "K" || rest == "k" || rest == "KiB")
    shift = 10;
  else if (rest == "M" || rest == "m" || rest == "MiB")
    shift = 20;
  else if (!rest.empty())
    throw option_error("--grain:stack-size=" + text + ": unknown unit '" + std::string(rest) +
                       "' (use K or M)");
  // Compared before the unit is applied, so that a huge number cannot wrap into the range.
  value = value > (max_stack_size >> shift) ? max_stack_size + 1 : value << shift;
  if (value < min_stack_size || value > max_stack_size)
    throw option_error("--grain:stack-size=" + text + ": must be in [16K, 256M]");
  return value;
}

std::vector<pool_request> parse_pools(const std::string& spec, unsigned threads) {
  std::vector<pool_request> pools;
  unsigned used = 0;
  std::size_t pos = 0;
  while (!spec.empty() && pos <= spec.size()) {
    std::size_t end = spec.find(',', pos);
    std::string item = spec.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    auto colon = item.find(':');
    if (colon == std::string::npos || colon == 0)
      throw option_error("--grain:pools=" + spec + ": expected NAME:WORKERS[,NAME:WORKERS...]");
    std::string name = item.substr(0, colon);
    unsigned n = 0;
    auto text = item.substr(colon + 1);
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || p != text.data() + text.size() || n == 0)
      throw option_error("--grain:pools=" + spec + ": '" + text +
                         "' is not a positive worker count");
    if (name == "default")
      throw option_error(
          "--grain:pools=" + spec +
          ": 'default' is the pool of the remaining workers; name your pools otherwise");
    for (auto& q : pools)
      if (q.name == name)
        throw option_error("--grain:pools=" + spec + ": pool '" + name + "' twice");
    pools.push_back({name, n});
    used += n;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  if (used >= threads)
    throw option_error(
        "--grain:pools=" + spec + " uses " + std::to_string(used) + " of " +
        std::to_string(threads) +
        " workers; at least one must remain for the default pool (raise --grain:threads)");
  pools.push_back({"default", threads - used});
  return pools;
}

std::vector<option_spec> all_specs(const std::vector<std::unique_ptr<extension>>& exts) {
  std::vector<option_spec> specs = core_option_specs();
  for (auto& e : exts)
    for (auto& s : e->option_specs()) specs.push_back(s);
  return specs;
}

// More workers than processing units only time-share the cores; far more (4096 on 2 cores)
// makes start-up alone take minutes. Above this many per processing unit it takes a flag.
unsigned checked_threads(const options& o, const topology& topo) {
  const auto pus = static_cast<long long>(topo.pus().size());
  const auto threads = static_cast<unsigned>(o.get_int("threads", pus, 1, 4096));
  if (threads <= pus) return threads;
  // Under mpirun the binding is often the surprise: say where the limit comes from.
  const std::string what =
      "--grain:threads=" + std::to_string(threads) + " on " + std::to_string(pus) +
      " processing units" +
      (topo.restricted_to_process_binding()
           ? " (the PUs this process is bound to; mpirun --bind-to none or --map-by "
             "slot:PE=N gives a rank more, --grain:ignore-process-mask uses them all)"
           : "");
  if (o.has("oversubscribe")) return threads;
  if (threads > oversubscription_limit * pus)
    throw option_error(what + ": more than " + std::to_string(oversubscription_limit) +
                       " workers per processing unit only slow the program down (start-up "
                       "alone can take minutes); add --grain:oversubscribe if you mean it");
  spdlog::warn("grain: {}: workers share cores (add --grain:oversubscribe to silence this)", what);
  return threads;
}

}  // namespace

std::vector<option_spec> core_option_specs() {
  std::vector<option_spec> specs = {
      {"threads", "number of worker threads (default: one per processing unit)", true, false, "N"},
      {"pools", "named pools taking workers from the default pool, e.g. critical:2", true, false,
       "NAME:N[,NAME:N]"},
      {"bind",
       "thread mapping: compact, scatter, balanced, numa-balanced, numa-balanced-mtp, or none",
       true, false, "MAPPING"},
      {"ignore-process-mask",
       "use every PU of the machine, not only those the process is bound to (by mpirun, "
       "taskset, Slurm)",
       false, false, ""},
      {"stack-size",
       "user-thread stack size (default 1M, reserved; pages are committed as they are touched)",
       true, false, "BYTES[K|M]"},
      {"fences",
       "how a worker's pops of its own queue and the steals from it fence each other: adaptive "
       "(default: no fence while nobody steals), symmetric (always) or asymmetric (never; each "
       "steal pays a membarrier)",
       true, false, "MODE"},
      {"log-level", "trace, debug, info, warn, error, critical or off (default warn)", true, false,
       "LEVEL"},
      {"oversubscribe",
       "allow --grain:threads above " + std::to_string(oversubscription_limit) +
           " x the processing units",
       false, false, ""},
      {"help", "print these options and exit", false, false, ""},
      {"version", "print grain's version and exit", false, false, ""},
  };
  for (auto& s : detail::inlining_option_specs()) specs.push_back(s);
  for (auto& s : detail::critical_option_specs()) specs.push_back(s);
  return specs;
}

runtime_core::runtime_core(int& argc, char** argv, std::vector<std::unique_ptr<extension>> exts) {
  opts_.parse(argc, argv, all_specs(exts));
  start(std::move(exts));
}

runtime_core::runtime_core(const std::vector<std::string>& args,
                           std::vector<std::unique_ptr<extension>> exts, bool use_environment) {
  opts_.parse(args, all_specs(exts), use_environment);
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
                options::version(), options::usage(all_specs(exts)).c_str());
    std::fflush(stdout);
    throw startup_exit{0};
  }
  if (opts_.has("version")) {
    std::printf("grain %s\n", options::version());
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
  const unsigned threads = checked_threads(opts_, *topo_);
  detail::scheduler_config cfg;
  cfg.pools = parse_pools(opts_.get("pools", ""), threads);
  std::string bind = opts_.get("bind", "balanced");
  if (bind == "none") {
    cfg.bind = false;
  } else {
    try {
      cfg.mapping = parse_thread_mapping(bind);
    } catch (const std::invalid_argument& e) {
      throw option_error(std::string("--grain:bind: ") + e.what());
    }
  }
  if (opts_.has("stack-size")) cfg.stack_size = parse_size(opts_.get("stack-size"));
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
  install_signal_handling();
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
  uninstall_signal_handling();
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
