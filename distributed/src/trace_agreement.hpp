#pragma once
// The ranks of a job agree on tracing before the trace starts (trace_agreement.cpp).
#include <string>

#include "grain/instrumentation/trace_group.hpp"
#include "grain/options.hpp"

namespace grain::distributed {

// What of this rank's options decides whether, where and how it traces — the choices every
// rank must share, since a multi-rank trace is written collectively: "no tracing", or
// "--grain:trace=DIR --grain:trace-format=FMT".
std::string tracing_choice(const options& o);

// Collective: every rank of `g` calls it with its own choice. Returns when all are equal;
// otherwise throws option_error on every rank, with one message naming each rank's choice.
// Runs before any other collective step of the trace, so a disagreement cannot leave one rank
// waiting in a collective the others never enter.
void agree_on_tracing(instrumentation::trace_group& g, const std::string& mine);

}  // namespace grain::distributed
