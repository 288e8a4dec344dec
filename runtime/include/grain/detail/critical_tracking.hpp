#pragma once
// --grain:critical=auto (runtime/src/critical_auto.cpp; docs/critical-pools.md): Jiang et al.
// 2020's three steps done online — the longest path of the dataflow graph observed over a window,
// how often each task kind lies on it, the most frequent kinds routed to the pool "critical".
// dataflow.hpp records each finished task here; spawn routes tasks without a pool by kind.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace grain::detail {

class state_base;

extern std::atomic<bool> g_critical_tracking;
inline bool critical_tracking_on() noexcept {
  return g_critical_tracking.load(std::memory_order_relaxed);
}

// A dataflow task of kind `kind` that produced `self` ran for dur_ns; in[0..n) were its inputs
// (all ready and alive while it ran, so their records are this window's or gone).
void critical_record(const state_base* self, const state_base* const* in, std::size_t n,
                     const char* kind, std::uint64_t dur_ns);

// The pool a task without a pool of its own goes to: "critical" for the detected kinds,
// "default" for the others.
int critical_route(const char* kind) noexcept;

// The kinds routed to the critical pool now, comma-separated ("" before the first window),
// and how many windows were analysed.
std::string critical_kinds();
std::uint64_t critical_windows() noexcept;

}  // namespace grain::detail
