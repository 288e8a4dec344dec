#pragma once
// Registers the /collectives counters of a locality's collectives; returns the registry ids.
#include <vector>

#include "collectives_engine.hpp"
#include "grain/instrumentation/counters.hpp"

namespace grain::distributed {

std::vector<int> register_collectives_counters(instrumentation::counter_registry& reg,
                                               const collectives_engine& engine);

}  // namespace grain::distributed
