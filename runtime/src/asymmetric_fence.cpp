// Asymmetric fences (asymmetric_fence.hpp): registration and the heavy side, membarrier(2).
#include "asymmetric_fence.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace grain::detail {

bool g_asymmetric_fences = false;

namespace {

long membarrier(int cmd) noexcept {
  return syscall(__NR_membarrier, cmd, 0u, 0);
}

bool register_membarrier() noexcept {
  const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

}  // namespace

bool enable_asymmetric_fences() noexcept {
  // Registered again by every scheduler: registering twice is harmless, and a child forked
  // after an earlier runtime ran must not rely on its parent's registration.
  g_asymmetric_fences = register_membarrier();
  return g_asymmetric_fences;
}

bool configure_asymmetric_fences() noexcept {
  // Off unless asked for: a steal then costs a system call and an interrupt to every running
  // worker, which fine-grained dataflow with many steals pays for dearly (the 1D stencil with
  // 2,000-point partitions on 2 workers took 2.9x as long), while a spawn storm that rarely
  // steals gains ~12 % (skynet). docs/architecture.md, "The spawn and join hot path".
  const char* env = std::getenv("GRAIN_ASYMMETRIC_FENCES");
  if (env && std::strcmp(env, "1") == 0) return enable_asymmetric_fences();
  g_asymmetric_fences = false;
  return false;
}

void heavy_fence() noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Registered before the flag was set, so the command cannot fail with EPERM; should it
  // fail anyway, no barrier happened: stop rather than let two threads take one task.
  if (g_asymmetric_fences && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) std::abort();
}

}  // namespace grain::detail
