#pragma once
#include "grain/ext/hooks.hpp"

namespace grain::detail {
// The hook table itself, read directly on the hot path (one load per hook).
extern runtime_hooks g_hooks;
}  // namespace grain::detail
