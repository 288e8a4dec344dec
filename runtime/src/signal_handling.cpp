// Signals, std::terminate and exit() while the runtime runs: the extensions flush what they
// recorded (complete traces, the summary), then the process dies the way it would have without
// grain.
#include "signal_handling.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "grain/ext/runtime_core.hpp"

namespace grain::detail {
namespace {

// SIGINT, SIGTERM, SIGHUP (the terminal or the ssh session went away: the common end of an
// interactive run) and SIGQUIT (Ctrl-\): the handler writes the signal to a pipe; the signal
// thread runs the extensions' emergency_stop (locks, files: not signal-safe), puts the
// dispositions back and raises the signal again, so SIGQUIT still dumps core where that is
// enabled. A signal the process inherited as ignored (a background job of a non-interactive
// shell, nohup's SIGHUP) is left ignored: there is nothing to flush "before exiting".
//
// Crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): the crashing thread cannot flush, since
// it may hold any lock; it hands the work to the signal thread and waits (bounded: the flush
// may need a lock the crashed thread holds) before passing the signal on to the handler that
// was there before ours (the scheduler's stack-overflow report, or the default action).
constexpr int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
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
  runtime_core* rt = runtime_core::current();
  if (!rt || g_emergency_begun.load()) return;
  std::fprintf(stderr, "grain: exit() while the runtime runs: writing what was recorded\n");
  emergency(rt);
}

void on_terminate() {
  emergency(runtime_core::current());
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
    emergency(runtime_core::current());
    // Nobody reads the pipe from now on: every signal gets its old disposition back, so a
    // second stop signal is not swallowed.
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

}  // namespace

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

}  // namespace grain::detail
