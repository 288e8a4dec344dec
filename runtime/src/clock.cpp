// The TSC clock behind now_ns() (grain/clock.hpp): detection, calibration against
// CLOCK_MONOTONIC, and refinement. The fit is a straight line through the first pairing and
// the latest one, so its rate error shrinks as the process runs (two clock reads ~50 ns apart
// over t seconds: 5e-8 / t); each refinement slews the published conversion towards that
// line over the next second instead of jumping, so now_ns() never goes backwards.
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <string_view>

#include "grain/clock.hpp"

namespace grain::detail {

tsc_conversion g_tsc;

namespace {

struct pairing {
  std::uint64_t tsc = 0;
  std::uint64_t ns = 0;
};

std::mutex g_mutex;
bool g_checked = false;  // under g_mutex: the calibration ran (once per process)
bool g_usable = false;   // under g_mutex: and succeeded
pairing g_first;         // under g_mutex: the fit's first point

bool invariant_tsc() noexcept {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return (d & (1u << 8)) != 0;
#else
  return false;
#endif
}

// The kernel checks at boot that the TSCs of all CPUs agree and keeps watching them; when they
// do not (some hypervisors), it leaves "tsc" for another clocksource, and so do we. Without
// sysfs (a container may hide it) the CPU flag alone decides.
bool kernel_trusts_tsc() noexcept {
  std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  if (!(f >> source)) return true;
  return source == "tsc";
}

// A CLOCK_MONOTONIC reading and the tick in the middle of the two ticks around it; of a few
// tries the one with the narrowest bracket (a preemption in between widens it).
// The time-stamp counter; elsewhere than on x86-64 the TSC clock is never enabled
// (invariant_tsc() is false) and this is not called.
std::uint64_t read_tsc() noexcept {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

pairing read_pairing() noexcept {
  pairing best;
  std::uint64_t narrowest = ~0ull;
  for (int i = 0; i < 8; ++i) {
    const std::uint64_t t1 = read_tsc();
    const std::uint64_t ns = monotonic_ns();
    const std::uint64_t t2 = read_tsc();
    if (t2 - t1 < narrowest) {
      narrowest = t2 - t1;
      best = {t1 + (t2 - t1) / 2, ns};
    }
  }
  return best;
}

// ns per tick in 32.32 fixed point between two pairings.
std::uint64_t rate_between(pairing a, pairing b) noexcept {
  return static_cast<std::uint64_t>((static_cast<uint128>(b.ns - a.ns) << 32) / (b.tsc - a.tsc));
}

std::uint64_t convert(std::uint64_t tsc) noexcept {
  return tsc_to_ns(tsc, g_tsc.base_tsc.load(std::memory_order_relaxed),
                   g_tsc.base_ns.load(std::memory_order_relaxed),
                   g_tsc.mult.load(std::memory_order_relaxed));
}

// `mult` in 32.32 (the fit's own precision), published as 0.64 (tsc_to_ns): plausible() keeps it
// below 2^32.
void publish(std::uint64_t base_tsc, std::uint64_t base_ns, std::uint64_t mult) noexcept {
  const std::uint32_t s = g_tsc.seq.load(std::memory_order_relaxed);
  g_tsc.seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  g_tsc.base_tsc.store(base_tsc, std::memory_order_relaxed);
  g_tsc.base_ns.store(base_ns, std::memory_order_relaxed);
  // A slewed rate may pass the fitted one by 0.1 %: keep it a fraction.
  if (mult >= (1ull << 32)) mult = (1ull << 32) - 1;
  g_tsc.mult.store(mult << 32, std::memory_order_relaxed);
  g_tsc.seq.store(s + 2, std::memory_order_release);
}

// A tick rate the clock takes (mult in 32.32 ns per tick): above 1 GHz, so that a tick is less
// than a nanosecond (tsc_to_ns's 0.64 fixed point), and at most 10 GHz. Invariant TSCs run at the
// processor's base frequency; a slower one leaves the clock on CLOCK_MONOTONIC.
bool plausible(std::uint64_t mult) noexcept {
  return mult >= (1ull << 32) / 10 && mult < (1ull << 32);
}

}  // namespace

bool enable_tsc_clock() noexcept {
  std::lock_guard lk(g_mutex);
  if (g_checked) {
    if (g_usable) g_tsc.enabled.store(true, std::memory_order_release);
    return g_usable;
  }
  g_checked = true;
  if (const char* e = std::getenv("GRAIN_CLOCK"); e && std::string_view(e) == "monotonic")
    return false;
  if (!invariant_tsc() || !kernel_trusts_tsc()) return false;
  // 2 ms of spinning once per process: the first fit is good to ~5e-5; refinements do better.
  const pairing a = read_pairing();
  pairing b;
  do {
    b = read_pairing();
  } while (b.ns - a.ns < 2'000'000 && b.tsc > a.tsc);
  if (b.tsc <= a.tsc) return false;  // the TSC went backwards: not usable
  const std::uint64_t mult = rate_between(a, b);
  if (!plausible(mult)) return false;
  publish(b.tsc, b.ns, mult);
  // Check the conversion on a fresh pairing before anyone reads it.
  const pairing c = read_pairing();
  const std::uint64_t converted = convert(c.tsc);
  const std::uint64_t err = converted > c.ns ? converted - c.ns : c.ns - converted;
  if (err > 20'000) return false;
  g_first = a;
  g_usable = true;
  g_tsc.enabled.store(true, std::memory_order_release);
  return true;
}

void refine_tsc_clock() noexcept {
  std::unique_lock lk(g_mutex, std::try_to_lock);
  if (!lk.owns_lock() || !g_tsc.enabled.load(std::memory_order_relaxed)) return;
  const pairing p = read_pairing();
  if (p.tsc <= g_first.tsc || p.ns - g_first.ns < 10'000'000) return;
  const std::uint64_t rate = rate_between(g_first, p);
  if (!plausible(rate)) return;
  // From where the published line is at p.tsc, head for the fitted line's value one second
  // later: no jump, and the gap closes within a second. The slope is kept within 0.1 % of the
  // fitted rate, so a large gap closes at 1 ms per second rather than bending time.
  const std::uint64_t here = convert(p.tsc);
  const std::uint64_t horizon_ticks =
      static_cast<std::uint64_t>((static_cast<uint128>(1'000'000'000ull) << 32) / rate);
  const std::uint64_t target = p.ns + 1'000'000'000ull;
  std::uint64_t mult = rate;
  if (target > here)
    mult = static_cast<std::uint64_t>((static_cast<uint128>(target - here) << 32) / horizon_ticks);
  const std::uint64_t lo = rate - rate / 1000, hi = rate + rate / 1000;
  mult = mult < lo ? lo : (mult > hi ? hi : mult);
  publish(p.tsc, here, mult);
}

void disable_tsc_clock() noexcept {
  std::lock_guard lk(g_mutex);
  g_tsc.enabled.store(false, std::memory_order_release);
}

const char* clock_source() noexcept {
  return g_tsc.enabled.load(std::memory_order_acquire) ? "tsc" : "monotonic";
}

}  // namespace grain::detail
