// Stack overflow: a guard page hit while running a user thread (stack_guard.hpp).
#include "stack_guard.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>

#include "scheduler.hpp"
#include "stack_pool.hpp"

namespace grain::detail {
namespace {

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
  worker* w = current_worker();
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

}  // namespace

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

alt_signal_stack::alt_signal_stack() noexcept {
  mem_ = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem_ == MAP_FAILED) return;
  stack_t ss{};
  ss.ss_size = size;
  ss.ss_sp = mem_;
  ::sigaltstack(&ss, nullptr);
}

alt_signal_stack::~alt_signal_stack() {
  if (mem_ == MAP_FAILED) return;
  stack_t off{};
  off.ss_flags = SS_DISABLE;
  ::sigaltstack(&off, nullptr);
  ::munmap(mem_, size);
}

}  // namespace grain::detail
