#pragma once
// Asymmetric fences: a Dekker-style pair in which one side runs all the time (the owner's pop
// of its deque, once per task) and the other rarely (a thief that found work to steal). The
// frequent side's full fence (a locked instruction, 6-30 ns in this VM) becomes a compiler
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
// The mode (chase_lev_deque.hpp says what each does) is chosen once, before any worker exists
// (configure_fences, from the scheduler's constructor), and never changed while a deque is in
// use: a pair must not mix the modes. --grain:fences=adaptive|symmetric|asymmetric chooses it
// (GRAIN_FENCES; the older GRAIN_ASYMMETRIC_FENCES=1 / =0 means asymmetric / symmetric); the
// default is adaptive. Both need membarrier (kernel >= 4.14, no seccomp filter against it):
// without it the mode is symmetric.
#include <atomic>
#include <optional>

#include "grain/detail/config.hpp"

namespace grain::detail {

enum class fence_mode : unsigned char { symmetric, asymmetric, adaptive };

extern fence_mode g_fence_mode;  // written before any thread reads it concurrently

// Sets the mode; asymmetric and adaptive register the process for expedited membarrier first
// and fall back to symmetric when that fails. Returns the mode in force. Only while no deque
// is in use.
fence_mode set_fence_mode(fence_mode m) noexcept;
// The runtime's request (--grain:fences), for every scheduler started after it; nullopt: none
// (an earlier runtime's choice is not the next one's).
void request_fence_mode(std::optional<fence_mode> m) noexcept;
// The request, or without one GRAIN_ASYMMETRIC_FENCES, or adaptive.
fence_mode requested_fence_mode() noexcept;
// The scheduler's choice: set_fence_mode(requested_fence_mode()).
fence_mode configure_fences() noexcept;
const char* fence_mode_name(fence_mode m) noexcept;
// "adaptive", "symmetric" or "asymmetric"; false for anything else.
bool parse_fence_mode(const char* text, fence_mode& m) noexcept;

// A full fence on the calling thread and, unless the mode is symmetric, on every running
// thread of the process. Costs a system call (and an interrupt to each CPU running one of them).
void heavy_fence() noexcept;

}  // namespace grain::detail
