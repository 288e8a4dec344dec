#pragma once
// The grain table policies see: lua_api.cpp assembles it from the binding files, one per
// part of the API (lua_triggers.cpp, lua_tune.cpp, lua_knobs.cpp, lua_counters.cpp,
// lua_settings.cpp). The reference is docs/lua-api.md.
#include <lua.hpp>

#include <string>
#include <string_view>

#include "grain/instrumentation/listener.hpp"

namespace grain::policy {

// Registry name of the knob userdata's metatable (made read-only with the API).
inline constexpr const char* knob_meta = "grain.knob";

// Sets the global `grain` (and `print`, which logs like grain.log.info).
void open_grain_api(lua_State* L);

// Each adds its functions to the table on the top of the stack.
void add_trigger_functions(lua_State* L);   // every, on, when, cancel
void add_tune_function(lua_State* L);       // tune
void add_knob_functions(lua_State* L);      // knob, knobs (and the knob metatable)
void add_counter_functions(lua_State* L);   // counter, counters, reset_counters, time
void add_settings_functions(lua_State* L);  // settings, optional (lua_settings.cpp)

// The event's payload as a table (what grain.on rules get).
void push_event_table(lua_State* L, const instrumentation::app_event& e);
// "throttle.lua" for "policies/throttle.lua": rule names carry the file's name only.
std::string basename_of(std::string_view path);

}  // namespace grain::policy
