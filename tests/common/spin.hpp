#pragma once
// Busy for about `ns` nanoseconds of wall time: by the clock, so that a spin the OS preempts
// still ends on time (tests that need task durations as ground truth).
#include <cstdint>

#include "grain/clock.hpp"

namespace grain::test {

inline void spin_ns(std::uint64_t ns) {
  const std::uint64_t t0 = now_ns();
  while (now_ns() - t0 < ns) {
  }
}

}  // namespace grain::test
