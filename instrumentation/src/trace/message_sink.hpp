#pragma once
// The recording session that receives the network layer's messages (message_sink.cpp).
#include "session_core.hpp"

namespace grain::instrumentation::trace_detail {

// From start until stop of a session; at most one at a time. detach waits for a message
// being written.
void attach_message_sink(session_core& s) noexcept;
void detach_message_sink(session_core& s) noexcept;

}  // namespace grain::instrumentation::trace_detail
