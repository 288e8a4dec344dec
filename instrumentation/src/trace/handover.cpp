// The asymmetric barrier of the hand-over at stop (see handover.hpp).
#include "handover.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace grain::instrumentation::trace_detail {

busy_slot g_busy[max_workers];
std::atomic<bool> g_worker_fence{true};

namespace {

bool g_membarrier = false;

void heavy_barrier() noexcept {
  if (!g_membarrier || ::syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace

void init_barrier() {
  static const bool ok = [] {
    long q = ::syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
    return ::syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  }();
  g_membarrier = ok;
  g_worker_fence.store(!ok, std::memory_order_relaxed);
}

void wait_until_no_worker_in_hook(std::size_t workers, bool emergency) {
  heavy_barrier();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (std::size_t w = 0; w < workers; ++w)
    while (g_busy[w].busy.load(std::memory_order_acquire) &&
           !(emergency && std::chrono::steady_clock::now() > give_up))
      std::this_thread::yield();
}

}  // namespace grain::instrumentation::trace_detail
