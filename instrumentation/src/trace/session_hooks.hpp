#pragma once
// The trace's entry on the task path: its hook functions in the runtime's hook table, chained
// behind other tools (grain::hook_chain), and the one session they record into.
#include "session_core.hpp"

namespace grain::instrumentation::trace_detail {

// Makes `s` the session the hooks record into and installs them. Throws when another session
// records already (one trace per process).
void attach_hooks(session_core& s);
// Withdraws `s` from the hooks and removes them when nobody chained behind them; once it
// returns no worker is inside a hook (after 2 s at the latest with `emergency`, see
// handover.hpp).
void detach_hooks(session_core& s, bool emergency);

}  // namespace grain::instrumentation::trace_detail
