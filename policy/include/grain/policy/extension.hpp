#pragma once
// The policy extension: the Lua policy engine of the running runtime, command-line knob
// values and the decision log. grain::runtime constructs it after the counters and trace
// extensions. Options (each also GRAIN_<NAME>, see docs/lua-api.md):
//   --grain:policy=FILE          load a Lua policy (repeatable; GRAIN_POLICY may list several,
//                                separated by ',')
//   --grain:policy-budget=N      Lua instructions per rule call (default 1,000,000)
//   --grain:policy-memory=MB     memory cap of the Lua state (default 64)
//   --grain:knob=NAME=VALUE      start a knob at VALUE (repeatable); knobs the application
//                                defines later get the value when they are defined
//   --grain:list-knobs           list name, type, range, default, description; exit 0
#include <memory>

#include "grain/ext/extension.hpp"

namespace grain::policy {

std::unique_ptr<grain::extension> make_extension();

}  // namespace grain::policy
