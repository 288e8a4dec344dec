#pragma once
// A counter that reads num/den over the interval since its last reset (a mean per event, or
// parcels per message): each counter keeps its own baseline. Unavailable while den has not
// moved. Shared by the /coalescing and /collectives counters.
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

#include "grain/instrumentation/counters.hpp"

namespace grain::distributed {

// num() and den() read running totals (callables returning std::uint64_t).
template <class Num, class Den>
int add_interval_ratio(instrumentation::counter_registry& reg, instrumentation::counter_info info,
                       Num num, Den den) {
  struct baseline {
    std::uint64_t num = 0, den = 0;
  };
  auto base = std::make_shared<baseline>();
  return reg.add_counter(
      std::move(info),
      [num, den, base]() -> instrumentation::counter_reading {
        const std::uint64_t d = den() - base->den;
        if (d == 0) return {0, false};
        return {static_cast<double>(num() - base->num) / static_cast<double>(d), true};
      },
      [num, den, base] {
        base->num = num();
        base->den = den();
      });
}

inline int add_interval_ratio(instrumentation::counter_registry& reg,
                              instrumentation::counter_info info,
                              const std::atomic<std::uint64_t>& num,
                              const std::atomic<std::uint64_t>& den) {
  return add_interval_ratio(
      reg, std::move(info), [&num] { return num.load(); }, [&den] { return den.load(); });
}

}  // namespace grain::distributed
