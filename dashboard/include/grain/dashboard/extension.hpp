#pragma once
// The dashboard extension: --grain:dashboard=PORT serves a live page of the counters, knobs
// and decisions on http://127.0.0.1:PORT/ while the program runs (docs/dashboard.md).
#include <memory>

#include "grain/ext/extension.hpp"

namespace grain::dashboard {

std::unique_ptr<grain::extension> make_extension();

// The port the running dashboard listens on (the one chosen by the system for
// --grain:dashboard=0); 0 when no dashboard runs.
int bound_port() noexcept;

}  // namespace grain::dashboard
