#pragma once
// Between the policy extension and the process-wide registry of C++ policies
// (cpp_policies.cpp), which outlives any one engine.
#include "grain/policy/engine.hpp"

namespace grain::policy::detail {

// The extension's engine picks up the C++ policies registered process-wide.
void attach_cpp_policies(engine& e);
void detach_cpp_policies(engine& e);

}  // namespace grain::policy::detail
