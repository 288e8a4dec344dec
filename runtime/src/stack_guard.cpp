// Stack overflow: a fault in a stack's guard, or below a stack pointer that left its stack,
// while running a user thread (stack_guard.hpp).
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
#include "stack_ranges.hpp"

namespace grain::detail {
namespace {

struct sigaction g_old_segv;
std::atomic<int> g_segv_installs{0};

std::uintptr_t stack_pointer(const void* uctx) noexcept {
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(
      static_cast<const ucontext_t*>(uctx)->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(static_cast<const ucontext_t*>(uctx)->uc_mcontext.sp);
#else
  (void)uctx;
  return 0;
#endif
}

// Below this distance under the stack pointer a fault is still the frame being built (a call's
// return address, the probes of -fstack-clash-protection, the red zone of a leaf).
constexpr std::uintptr_t below_sp_slack = 64 * 1024;

// A fault on a worker running a user thread is an overflow of that thread's stack when
//   - it lies in any stack's reservation: the running stack's guard, or the guard of another
//     stack a frame larger than ours jumped into (the usable bytes of stacks are writable, so
//     a fault there is a protected slab guard as well); or
//   - the stack pointer has left the stack downwards and the fault lies between it and the
//     stack: a frame of any size, built without probes, that jumped over every guard.
bool is_stack_overflow(const stack& stk, const void* addr, std::uintptr_t sp) noexcept {
  if (!stk.guard) return false;
  if (stk.in_guard(addr) || stack_ranges::contains(addr)) return true;
  const auto base = reinterpret_cast<std::uintptr_t>(stk.base);
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  if (sp == 0 || sp >= base + stack_pool::page_size()) return false;
  return a < base && a + below_sp_slack >= sp;
}

void report_overflow(const worker& w, std::uintptr_t sp) noexcept {
  const char* name = w.current_task && w.current_task->info.name ? w.current_task->info.name : "?";
  const stack& stk = w.current->stk;
  const std::size_t size = stk.size;
  const auto top = reinterpret_cast<std::uintptr_t>(stk.top());
  // A stack pointer below the whole reservation, deeper than any stack may be: one frame that
  // belongs on the heap, not a stack to raise.
  const std::uintptr_t depth = sp != 0 && sp < top ? top - sp : 0;
  const bool frame_too_large =
      depth > stk.size + stk.guard_size && depth > stack_pool::max_stack_size;
  char buf[512];
  int n = 0;
  if (frame_too_large)
    n = std::snprintf(buf, sizeof buf,
                      "grain: stack overflow in task '%s' on worker %u: a frame of about %zu "
                      "bytes does not fit on any stack (--grain:stack-size is at most 256M); "
                      "allocate it on the heap\n",
                      name, w.id, static_cast<std::size_t>(depth));
  else if (size >= stack_pool::max_stack_size)
    n = std::snprintf(buf, sizeof buf,
                      "grain: stack overflow in task '%s' on worker %u: the stack is at the "
                      "maximum --grain:stack-size (%zu bytes), so the recursion is unbounded or "
                      "must become a loop or tasks\n",
                      name, w.id, size);
  else
    n = std::snprintf(buf, sizeof buf,
                      "grain: stack overflow in task '%s' on worker %u (stack size %zu bytes; "
                      "raise --grain:stack-size, at most 256M)\n",
                      name, w.id, size);
  if (n > 0) {
    ssize_t r = ::write(2, buf, static_cast<std::size_t>(std::min(n, 511)));
    (void)r;
  }
}

void segv_handler(int sig, siginfo_t* si, void* uctx) {
  worker* w = current_worker();
  const std::uintptr_t sp = stack_pointer(uctx);
  if (w && w->current && is_stack_overflow(w->current->stk, si->si_addr, sp)) {
    report_overflow(*w, sp);
    ::signal(SIGSEGV, SIG_DFL);
    return;  // re-faults with the default action
  }
  // Not a stack of ours: behave as if we were not here.
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
