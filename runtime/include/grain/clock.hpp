#pragma once
// The one clock of grain: CLOCK_MONOTONIC in nanoseconds. Every timestamp the runtime, the
// counters, the tracer and the policy engine take comes from here, so they can be compared.
#include <cstdint>
#include <ctime>

namespace grain {

inline std::uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace grain
