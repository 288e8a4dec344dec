// grain.every, grain.on, grain.when and grain.cancel: the Lua functions that make rules from
// Lua functions. A new Lua trigger is added here; only one that waits for an input no
// existing kind covers also needs its kind in rule.hpp and its case in rule_dispatch.cpp.
#include <cstdio>
#include <string>

#include "engine_impl.hpp"
#include "grain/clock.hpp"
#include "lua_api.hpp"
#include "rule.hpp"

namespace grain::policy {
namespace {

// Default rule name: file:line where the function was defined.
std::string function_name(lua_State* L, int idx, int name_idx) {
  if (lua_type(L, name_idx) == LUA_TSTRING) return lua_tostring(L, name_idx);
  lua_Debug ar;
  lua_pushvalue(L, idx);
  if (lua_getinfo(L, ">S", &ar) && ar.source) {
    std::string src = (ar.source[0] == '@' || ar.source[0] == '=') ? basename_of(ar.source + 1)
                                                                   : std::string("chunk");
    return src + ":" + std::to_string(ar.linedefined);
  }
  return "rule";
}

// A rule running the function at `fn_idx`, named by the argument at `fn_idx + 1` or where
// the function was defined; returns its id.
int add_lua_rule(lua_State* L, trigger when, std::string trigger_text, int fn_idx) {
  auto r = std::make_unique<rule>(std::move(when), lua_function{});
  r->info.name = function_name(L, fn_idx, fn_idx + 1);
  r->info.trigger = std::move(trigger_text);
  lua_pushvalue(L, fn_idx);
  std::get<lua_function>(r->what).ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return engine_of(L)->add_rule(std::move(r));
}

// grain.every(ms, fn [, name]) -> id
int l_every(lua_State* L) {
  const double ms = luaL_checknumber(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  if (!(ms >= 1)) return luaL_error(L, "grain.every: the period must be >= 1 ms");
  periodic_trigger e;
  e.period_ns = static_cast<std::uint64_t>(ms * 1e6);
  e.next_due = now_ns() + e.period_ns;
  char buf[64];
  std::snprintf(buf, sizeof buf, "every %g ms", ms);
  lua_pushinteger(L, add_lua_rule(L, e, buf, 2));
  return 1;
}

// grain.on(event, fn [, name]) -> id
int l_on(lua_State* L) {
  const char* ev = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushinteger(L, add_lua_rule(L, event_trigger{ev}, std::string("on ") + ev, 2));
  return 1;
}

// grain.when(counter, op, value, fn [, name]) -> id
int l_when(lua_State* L) {
  const char* counter = luaL_checkstring(L, 1);
  const char* op_text = luaL_checkstring(L, 2);
  const double v = luaL_checknumber(L, 3);
  luaL_checktype(L, 4, LUA_TFUNCTION);
  const std::optional<comparison> op = parse_comparison(op_text);
  if (!op) return luaL_error(L, "grain.when: operator '%s' is not one of < <= > >= == ~=", op_text);
  char buf[64];
  std::snprintf(buf, sizeof buf, " %s %g", symbol(*op), v);
  lua_pushinteger(L, add_lua_rule(L, counter_trigger{counter, *op, v},
                                  std::string("when ") + counter + buf, 4));
  return 1;
}

int l_cancel(lua_State* L) {
  engine_of(L)->remove(static_cast<int>(luaL_checkinteger(L, 1)));
  return 0;
}

}  // namespace

void add_trigger_functions(lua_State* L) {
  static const luaL_Reg funcs[] = {
      {"every", l_every}, {"on", l_on}, {"when", l_when}, {"cancel", l_cancel}, {nullptr, nullptr}};
  luaL_setfuncs(L, funcs, 0);
}

}  // namespace grain::policy
