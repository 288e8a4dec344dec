#pragma once
// The t_o calibration behind grain/detail/task_overhead.hpp (runtime-internal side).
#include <cstddef>

#include "grain/topology.hpp"

namespace grain::detail {

// Measures t_o on a private one-worker scheduler with the hook table cleared for the duration,
// so neither counters nor traces of the real runtime see the calibration tasks. Must be called
// while no scheduler runs (runtime_core::start calls it before creating its own).
double measure_task_overhead_ns(const topology& topo, std::size_t stack_size);

// Publishes t_o for task_overhead_ns() (the measurement or --grain:task-overhead).
void set_task_overhead_ns(double ns) noexcept;

}  // namespace grain::detail
