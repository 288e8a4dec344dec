#pragma once
// The /coalescing counters of one coalesced action (Wagle 2019 §3.1 names, docs/counters.md).
#include <string>
#include <vector>

#include "coalescer.hpp"
#include "grain/instrumentation/counters.hpp"

namespace grain::distributed {

// Registers /coalescing{action#A/locality#R}/...; returns the registry ids (to remove them).
std::vector<int> register_coalescing_counters(instrumentation::counter_registry& reg,
                                              std::uint32_t rank, const std::string& action,
                                              const coalescing_stats& s);
// /coalescing{locality#R/total}/time/timer-lateness: how late the flush timer sends.
std::vector<int> register_timer_counters(instrumentation::counter_registry& reg, std::uint32_t rank,
                                         const timer_stats& t);

}  // namespace grain::distributed
