#pragma once
// The run summary (summary.json) written at exit (summary.cpp).
#include <cstdint>
#include <string>

#include "grain/instrumentation/counters.hpp"

namespace grain::instrumentation::detail {

// Throws option_error when the summary could not be written at exit (checked at start-up).
void check_summary_path(const std::string& path);
void write_summary(const std::string& path, const counter_snapshot& final_snapshot,
                   double wall_time_s, std::uint64_t start_ns, const std::string& app,
                   unsigned workers);

}  // namespace grain::instrumentation::detail
