#pragma once
// The one clock of grain: CLOCK_MONOTONIC in nanoseconds. Every timestamp the runtime, the
// counters, the tracer and the policy engine take comes from here, so they can be compared.
// The CPU-time reader sits beside it so that the sampler and the policy thread report their
// own cost the same way.
#include <cstdint>
#include <ctime>

namespace grain {

inline std::uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
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
