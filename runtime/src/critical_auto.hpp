#pragma once
// Starting and stopping --grain:critical=auto (critical_auto.cpp) with the runtime.
#include <string>
#include <vector>

#include "grain/options.hpp"

namespace grain::detail {

class scheduler;

std::vector<option_spec> critical_option_specs();
// Reads --grain:critical and --grain:critical-window; with auto, needs the pool "critical"
// (option_error otherwise) and turns the tracking on.
void start_critical_auto(const options& o, scheduler& s);
void stop_critical_auto();

}  // namespace grain::detail
