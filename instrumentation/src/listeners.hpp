#pragma once
// Hands samples and application events to every registered listener (listeners.cpp).
#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/listener.hpp"

namespace grain::instrumentation::detail {

void notify_sample(const counter_snapshot& s);
void notify_event(const app_event& e);

}  // namespace grain::instrumentation::detail
