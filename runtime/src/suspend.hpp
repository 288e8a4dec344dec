#pragma once
// A running user thread leaving its worker (park, yield, fork): the one place where its phase
// ends, it starts to count as suspended, and its fiber is switched out for a free loop fiber.
// Separate from park.cpp because fork and yield leave the same way without parking.
#include "fiber.hpp"
#include "scheduler.hpp"

namespace grain::detail {

// `action(arg, from)` runs on the next loop fiber once the running one (`from`) is fully
// saved: only from there on may anyone else resume it. Returns when it has been resumed.
void suspend_current(worker* w, void (*action)(void* arg, fiber* from), void* arg);

}  // namespace grain::detail
