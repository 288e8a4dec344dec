#pragma once
// Registers the /parcels counters of a parcel port; returns the registry ids (to remove them).
#include <vector>

#include "grain/instrumentation/counters.hpp"
#include "parcelport.hpp"

namespace grain::distributed {

std::vector<int> register_parcel_counters(instrumentation::counter_registry& reg,
                                          const parcelport& port);

}  // namespace grain::distributed
