// Asymmetric fences (asymmetric_fence.hpp): the mode, registration and the heavy side,
// membarrier(2).
#include "asymmetric_fence.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace grain::detail {

fence_mode g_fence_mode = fence_mode::symmetric;

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

fence_mode set_fence_mode(fence_mode m) noexcept {
  // Registered again by every scheduler: registering twice is harmless, and a child forked
  // after an earlier runtime ran must not rely on its parent's registration.
  if (m != fence_mode::symmetric && !register_membarrier()) m = fence_mode::symmetric;
  g_fence_mode = m;
  return m;
}

namespace {
std::atomic<int> g_requested{-1};  // a fence_mode, or -1: none
}  // namespace

void request_fence_mode(std::optional<fence_mode> m) noexcept {
  g_requested.store(m ? static_cast<int>(*m) : -1, std::memory_order_relaxed);
}

fence_mode requested_fence_mode() noexcept {
  if (const int r = g_requested.load(std::memory_order_relaxed); r >= 0)
    return static_cast<fence_mode>(r);
  const char* env = std::getenv("GRAIN_ASYMMETRIC_FENCES");
  if (env && std::strcmp(env, "1") == 0) return fence_mode::asymmetric;
  if (env && std::strcmp(env, "0") == 0) return fence_mode::symmetric;
  return fence_mode::adaptive;
}

fence_mode configure_fences() noexcept {
  // Asymmetric alone makes every steal a system call and an interrupt to every running
  // worker, which fine-grained dataflow with many steals pays for dearly (the 1D stencil with
  // 2,000-point partitions on 2 workers took 2.9x as long); adaptive pays it once per quiet
  // stretch of a deque. docs/design/hot-path.md, "Adaptive fences".
  return set_fence_mode(requested_fence_mode());
}

bool parse_fence_mode(const char* text, fence_mode& m) noexcept {
  for (fence_mode c : {fence_mode::adaptive, fence_mode::symmetric, fence_mode::asymmetric})
    if (std::strcmp(text, fence_mode_name(c)) == 0) {
      m = c;
      return true;
    }
  return false;
}

const char* fence_mode_name(fence_mode m) noexcept {
  switch (m) {
    case fence_mode::symmetric:
      return "symmetric";
    case fence_mode::asymmetric:
      return "asymmetric";
    case fence_mode::adaptive:
      return "adaptive";
  }
  return "?";
}

void heavy_fence() noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Registered before the mode was set, so the command cannot fail with EPERM; should it
  // fail anyway, no barrier happened: stop rather than let two threads take one task.
  if (g_fence_mode != fence_mode::symmetric && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
    std::abort();
}

}  // namespace grain::detail
