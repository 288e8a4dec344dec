#pragma once
// The hand-over at stop: once stop() returns from wait_until_no_worker_in_hook, no worker is
// inside a hook and none enters one, so the back end may take the workers' buffers without a
// lock on the task path. Each worker flags itself busy while inside a hook; the barrier that
// makes the flag visible is asymmetric: the worker pays a compiler fence, the stopping thread a
// membarrier system call (a real fence on both sides where membarrier is missing). Separate
// from the hooks because it is the one subtle concurrency argument of the trace
// (docs/tracing.md, "How it is recorded (cost)").
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace grain::instrumentation::trace_detail {

inline constexpr unsigned max_workers = 4096;

struct alignas(64) busy_slot {
  std::atomic<std::uint32_t> busy{0};
};
// Hidden: the hooks reach them PC-relative (no GOT load on the task path).
[[gnu::visibility("hidden")]] extern busy_slot g_busy[max_workers];
// True when membarrier(PRIVATE_EXPEDITED) is not available: workers then use a real fence.
[[gnu::visibility("hidden")]] extern std::atomic<bool> g_worker_fence;

// Once per session, before the hooks are installed: picks membarrier or real fences.
void init_barrier();

inline void light_barrier() noexcept {
  if (g_worker_fence.load(std::memory_order_relaxed))
    std::atomic_thread_fence(std::memory_order_seq_cst);
  else
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

// A worker inside a hook, from before it looks at the session until it is done with it.
struct busy_guard {
  std::atomic<std::uint32_t>& b;
  explicit busy_guard(unsigned w) noexcept : b(g_busy[w].busy) {
    b.store(1, std::memory_order_relaxed);
    light_barrier();
  }
  ~busy_guard() { b.store(0, std::memory_order_release); }
  busy_guard(const busy_guard&) = delete;
  busy_guard& operator=(const busy_guard&) = delete;
};

// The stopping thread, after it withdrew the session from the hooks: returns once none of the
// first `workers` workers is inside a hook. With `emergency` (a crash inside a hook: that worker
// never leaves it) it gives up after 2 s and the records up to the crash are taken as they are.
void wait_until_no_worker_in_hook(std::size_t workers, bool emergency);

}  // namespace grain::instrumentation::trace_detail
