#pragma once
// The one clock of grain: CLOCK_MONOTONIC in nanoseconds. Every timestamp the runtime, the
// counters, the tracer and the policy engine take comes from here, so they can be compared.
//
// On x86-64 with an invariant TSC (constant rate, not stopped in idle states: cpuid
// 0x80000007 EDX bit 8) the clock is the TSC converted to nanoseconds with a calibrated
// factor, anchored to CLOCK_MONOTONIC: one rdtsc and a multiply instead of a vDSO
// clock_gettime, which costs 20-40 ns in a VM and is taken twice per task phase. The factor is
// refined against CLOCK_MONOTONIC while the process runs (detail::refine_tsc_clock), so the
// two stay within microseconds; docs/design/clock.md.
//
// The CPU-time reader sits beside it so that the sampler and the policy thread report their
// own cost the same way.
#include <atomic>
#include <cstdint>
#include <ctime>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace grain {

namespace detail {

// 64 x 32.32 fixed-point products need 128 bits (g++ and clang have them on 64-bit targets).
__extension__ typedef unsigned __int128 uint128;

// base_ns + (tsc - base_tsc) ticks at `mult` ns per tick, in 0.64 fixed point (the TSC runs
// faster than 1 GHz: enable_tsc_clock refuses a slower one), so that the product's high half is
// the result: one multiply, no shift. A tick read just before the base (rdtsc is not ordered)
// counts as the base.
inline std::uint64_t tsc_to_ns(std::uint64_t tsc, std::uint64_t base_tsc, std::uint64_t base_ns,
                               std::uint64_t mult) noexcept {
  std::uint64_t ticks = tsc - base_tsc;
  // Unsigned throughout: from a signed value g++ builds a signed 128-bit product (two
  // multiplies).
  if (static_cast<std::int64_t>(ticks) < 0) ticks = 0;
  return base_ns + static_cast<std::uint64_t>((static_cast<uint128>(ticks) * mult) >> 64);
}

inline std::uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// ns = base_ns + ((tsc - base_tsc) * mult) >> 32, published under a sequence lock: a reader
// retries while a refinement (odd seq) is being written.
struct tsc_conversion {
  std::atomic<std::uint32_t> seq{0};
  std::atomic<bool> enabled{false};
  std::atomic<std::uint64_t> base_tsc{0};
  std::atomic<std::uint64_t> base_ns{0};
  std::atomic<std::uint64_t> mult{0};  // ns per tick, 0.64 fixed point
};
extern tsc_conversion g_tsc;

// Calibrates (once per process) and turns the TSC clock on; false when this machine has no
// invariant TSC, when the kernel's clocksource is not "tsc", when GRAIN_CLOCK=monotonic is set, or
// when the calibration disagreed with CLOCK_MONOTONIC. Thread-safe; called by the runtime at start.
bool enable_tsc_clock() noexcept;
// Re-fits the factor on everything measured since calibration and slews towards
// CLOCK_MONOTONIC without a jump (called by the sampler, or by anyone, at any rate).
void refine_tsc_clock() noexcept;
// Back to clock_gettime until enable_tsc_clock() (tests; the conversion stays calibrated).
void disable_tsc_clock() noexcept;
// Which clock now_ns() reads: "tsc" or "monotonic".
const char* clock_source() noexcept;

}  // namespace detail

inline std::uint64_t now_ns() noexcept {
#if defined(__x86_64__)
  detail::tsc_conversion& c = detail::g_tsc;
  if (__builtin_expect(c.enabled.load(std::memory_order_relaxed), 1)) {
    for (;;) {
      const std::uint32_t s = c.seq.load(std::memory_order_acquire);
      const std::uint64_t bt = c.base_tsc.load(std::memory_order_relaxed);
      const std::uint64_t bn = c.base_ns.load(std::memory_order_relaxed);
      const std::uint64_t m = c.mult.load(std::memory_order_relaxed);
      const std::uint64_t tsc = __rdtsc();
      std::atomic_thread_fence(std::memory_order_acquire);
      if (!(s & 1) && c.seq.load(std::memory_order_relaxed) == s)
        return detail::tsc_to_ns(tsc, bt, bn, m);
    }
  }
#endif
  return detail::monotonic_ns();
}

// CPU time of the thread whose clock this is (pthread_getcpuclockid, or
// CLOCK_THREAD_CPUTIME_ID for the caller); 0 when it cannot be read (its thread has ended).
inline std::uint64_t thread_cpu_ns(clockid_t clock) noexcept {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace grain
