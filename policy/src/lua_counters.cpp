// grain.counter, grain.counters, grain.reset_counters and grain.time: what policies read.
// Every counter read is noted as the trigger of the decisions that follow.
#include <optional>

#include "engine_impl.hpp"
#include "grain/clock.hpp"
#include "grain/instrumentation/counters.hpp"
#include "lua_api.hpp"

namespace grain::policy {
namespace {

// grain.counter(name) -> value, true | nil, false
int l_counter(lua_State* L) {
  engine::impl* e = engine_of(L);
  std::size_t len = 0;
  const char* name = luaL_checklstring(L, 1, &len);
  const instrumentation::counter_value* c = e->counters.find(std::string_view(name, len));
  if (!c || !c->available) {
    lua_pushnil(L);
    lua_pushboolean(L, 0);
    return 2;
  }
  e->decisions.note_read(c->name, c->value);
  lua_pushnumber(L, c->value);
  lua_pushboolean(L, 1);
  return 2;
}

// grain.counters(pattern) -> { [full name] = value, ... } (available counters only)
int l_counters(lua_State* L) {
  engine::impl* e = engine_of(L);
  const char* pat = luaL_optstring(L, 1, "*");
  std::optional<instrumentation::counter_pattern> p;
  try {
    p.emplace(pat);
  } catch (const std::exception& ex) {
    return luaL_error(L, "grain.counters: %s", ex.what());
  }
  lua_newtable(L);
  for (auto& c : e->counters.snapshot().values) {
    if (!c.available || !p->matches(std::string_view(c.name))) continue;
    e->decisions.note_read(c.name, c.value);
    lua_pushnumber(L, c.value);
    lua_setfield(L, -2, c.name.c_str());
  }
  return 1;
}

int l_time(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(now_ns()) * 1e-9);
  return 1;
}
// grain.reset_counters(): every counter starts again from zero, so that what the next
// snapshots hold is the behaviour since this call (docs/lua-api.md).
int l_reset_counters(lua_State*) {
  instrumentation::registry().reset();
  return 0;
}

}  // namespace

void add_counter_functions(lua_State* L) {
  static const luaL_Reg funcs[] = {{"counter", l_counter},
                                   {"counters", l_counters},
                                   {"reset_counters", l_reset_counters},
                                   {"time", l_time},
                                   {nullptr, nullptr}};
  luaL_setfuncs(L, funcs, 0);
}

}  // namespace grain::policy
