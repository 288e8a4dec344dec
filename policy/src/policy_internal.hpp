#pragma once
#include "grain/policy/engine.hpp"

namespace grain::policy::detail {

// The extension's engine picks up the C++ policies registered process-wide.
void attach_cpp_policies(engine& e);
void detach_cpp_policies(engine& e);

}  // namespace grain::policy::detail
