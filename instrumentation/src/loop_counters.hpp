#pragma once
// The /loops counters of the parallel loops (loop_counters.cpp).
#include <memory>

#include "grain/instrumentation/counters.hpp"

namespace grain::instrumentation::detail {

std::shared_ptr<counter_provider> make_loop_provider();

}  // namespace grain::instrumentation::detail
