#pragma once
// The pause inside a spin-wait: it tells the core that the loop only waits (x86 PAUSE, Arm
// YIELD), so a sibling hardware thread gets the pipeline and leaving the loop costs no
// mis-speculated memory-order flush. The one place that knows the instruction of each
// architecture: every spin loop of grain calls this.
#include <atomic>

namespace grain::detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#elif defined(__powerpc64__) || defined(__powerpc__)
  asm volatile("or 27,27,27" ::: "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace grain::detail
