// The policy API made read-only. All policies share one state and its globals: the libraries
// and the grain table become read-only proxies and their global names cannot be assigned, so
// that one policy cannot break the rules of another (grain.knob = ..., string.format = nil,
// grain = {}). The policies' own globals stay shared. Separate because it runs once, over
// everything the sandbox and the bindings installed before it.
#include "lua_api.hpp"
#include "lua_sandbox.hpp"

namespace grain::policy {
namespace {

constexpr const char* readonly_key = "grain.readonly";  // registry: set of the proxies
constexpr const char* api_key = "grain.api";            // registry: the protected globals

int readonly_newindex(lua_State* L) {
  return luaL_error(L, "the policy API is read-only (cannot assign '%s')",
                    luaL_tolstring(L, 2, nullptr));
}

// next() over the real table (upvalue 1) without handing it out.
int readonly_next(lua_State* L) {
  lua_settop(L, 2);
  if (lua_next(L, lua_upvalueindex(1))) return 2;
  lua_pushnil(L);
  return 1;
}

int readonly_pairs(lua_State* L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

// Replaces the table at the top of the stack with a read-only proxy of it.
void make_readonly(lua_State* L) {
  const int real = lua_gettop(L);
  lua_newtable(L);
  lua_createtable(L, 0, 4);
  lua_pushvalue(L, real);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, readonly_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pushvalue(L, real);
  lua_pushcclosure(L, readonly_next, 1);
  lua_pushcclosure(L, readonly_pairs, 1);
  lua_setfield(L, -2, "__pairs");
  lua_pushliteral(L, "read-only");
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_getfield(L, LUA_REGISTRYINDEX, readonly_key);
  lua_pushvalue(L, -2);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_replace(L, real);
}

bool is_api_global(lua_State* L, int key) {
  lua_getfield(L, LUA_REGISTRYINDEX, api_key);
  lua_pushvalue(L, key);
  const bool api = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 2);
  return api;
}

// __newindex of the globals: new names are the policies' own, API names are refused.
int globals_newindex(lua_State* L) {
  if (is_api_global(L, 2))
    return luaL_error(L, "'%s' is part of the policy API and cannot be assigned",
                      luaL_tolstring(L, 2, nullptr));
  lua_settop(L, 3);
  lua_rawset(L, 1);
  return 0;
}

// rawset would get around both: refused on the proxies and for API names in the globals.
int l_rawset(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, LUA_REGISTRYINDEX, readonly_key);
  lua_pushvalue(L, 1);
  const bool proxy = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 2);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  const bool globals = lua_rawequal(L, 1, -1);
  lua_pop(L, 1);
  if (proxy || (globals && is_api_global(L, 2)))
    return luaL_error(L, "rawset: the policy API is read-only");
  lua_pushvalue(L, lua_upvalueindex(1));  // the original rawset
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

}  // namespace

// Called last in open_libs: every global so far becomes API.
void lock_api(lua_State* L) {
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, readonly_key);
  lua_getglobal(L, "rawset");
  lua_pushcclosure(L, l_rawset, 1);
  lua_setglobal(L, "rawset");
  // grain.log, then grain, then the libraries.
  lua_getglobal(L, "grain");
  lua_getfield(L, -1, "log");
  make_readonly(L);
  lua_setfield(L, -2, "log");
  lua_pop(L, 1);
  for (const char* lib :
       {"grain", LUA_STRLIBNAME, LUA_TABLIBNAME, LUA_MATHLIBNAME, LUA_UTF8LIBNAME, LUA_COLIBNAME}) {
    lua_getglobal(L, lib);
    make_readonly(L);
    lua_setglobal(L, lib);
  }
  // The string metatable leads to the real string table.
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  lua_pushliteral(L, "read-only");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 2);
  // The knob methods.
  luaL_getmetatable(L, knob_meta);
  lua_pushliteral(L, "read-only");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
  // The globals move into the API table, reached through the globals' metatable.
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  const int g = lua_gettop(L);
  lua_newtable(L);
  const int api = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, g)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, api);
  }
  lua_pushnil(L);
  while (lua_next(L, api)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, g);
  }
  lua_pushvalue(L, api);
  lua_setfield(L, LUA_REGISTRYINDEX, api_key);
  lua_createtable(L, 0, 3);
  lua_pushvalue(L, api);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, globals_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pushliteral(L, "read-only");
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, g);
  lua_settop(L, g - 1);
}

}  // namespace grain::policy
