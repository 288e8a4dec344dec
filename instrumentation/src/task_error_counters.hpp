#pragma once
// The count of task exceptions nobody read (task_error_counters.cpp).
#include <memory>

#include "grain/instrumentation/counters.hpp"

namespace grain::instrumentation::detail {

std::shared_ptr<counter_provider> make_task_error_provider();

}  // namespace grain::instrumentation::detail
