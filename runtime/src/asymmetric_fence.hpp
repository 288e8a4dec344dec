#pragma once
// Asymmetric fences: a Dekker-style pair in which one side runs all the time (the owner's pop
// of its deque, once per task) and the other rarely (a thief that found work to steal). The
// frequent side's full fence (a locked instruction, 20-30 ns in this VM) becomes a compiler
// barrier; the rare side pays for both with membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED),
// which makes every running thread of the process execute a full barrier before it returns
// (the same pair as folly's asymmetric_thread_fence_light/_heavy, and liburcu's).
//
// Why it is enough: a light-side thread either executed its fenced store before the heavy
// side's barrier reached its CPU (the barrier drains the store buffer: the heavy side's later
// loads see the store) or executes its following loads after it (they see every store the
// heavy side made before the call). A thread that is not running has passed through the
// scheduler, a full barrier itself.
//
// The choice is made once, before any worker exists (configure_asymmetric_fences, from the
// scheduler's constructor), and never undone: a pair must not mix the two modes. They are
// off unless GRAIN_ASYMMETRIC_FENCES=1 is in the environment (every steal then costs a
// membarrier: a net loss where workers steal often), and off without membarrier (old kernel,
// seccomp): both sides keep a full fence.
#include <atomic>

#include "grain/detail/config.hpp"

namespace grain::detail {

extern bool g_asymmetric_fences;  // written once before any thread reads it concurrently

// Registers the process for expedited membarrier and turns the light fences into compiler
// barriers when that worked. Returns whether they are. Only while no deque is in use.
bool enable_asymmetric_fences() noexcept;
// The scheduler's choice: enable_asymmetric_fences() when GRAIN_ASYMMETRIC_FENCES=1, else
// full fences on both sides. Returns whether asymmetric fences are on.
bool configure_asymmetric_fences() noexcept;

GRAIN_ALWAYS_INLINE void light_fence() noexcept {
  if (GRAIN_LIKELY(g_asymmetric_fences))
    std::atomic_signal_fence(std::memory_order_seq_cst);
  else
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

// A full fence on the calling thread and, with asymmetric fences on, on every running thread
// of the process. Costs a system call (and an interrupt to each CPU running one of them).
void heavy_fence() noexcept;

}  // namespace grain::detail
