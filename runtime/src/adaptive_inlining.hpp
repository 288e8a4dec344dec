#pragma once
// Runtime-internal side of adaptive inlining: start-up (knobs, options, t_o) and shutdown.
#include <cstddef>

#include "grain/options.hpp"
#include "grain/topology.hpp"

namespace grain::detail {

// The options this component owns (--grain:inline, --grain:task-overhead).
std::vector<option_spec> inlining_option_specs();

// Called by runtime_core::start before the runtime's scheduler exists and before extensions
// configure: defines inline.lambda and loop.lambda (back at their defaults for this runtime,
// so policies and --grain:knob see them), applies --grain:inline, and sets t_o from
// --grain:task-overhead or, the first time in a process, by measuring it.
void start_inlining(const options& o, const topology& topo, std::size_t stack_size);

// Called when the runtime stops: the default launch policy goes back to what it was.
void stop_inlining() noexcept;

}  // namespace grain::detail
