// grain.settings(defaults, given) and grain.optional(type [, default]): the one way a policy
// reads its settings. A policy declares every setting with its default; what the user gives
// (a global table such as THROTTLE, or the table passed to require("throttle").start{...})
// may only name those settings, each with the type of its default. A misspelt name or a
// value of the wrong type is a Lua error at load, naming the setting, instead of a silent
// default that makes the policy do something else than the user asked.
//
// Written against the Lua stack only: a Lua error unwinds with longjmp, so no C++ object
// with a destructor may be alive when one is raised.
#include <cstring>

#include "lua_api.hpp"

namespace grain::policy {
namespace {

constexpr const char* optional_meta = "grain.optional";
constexpr const char* type_names[] = {"number", "string", "boolean", "table", "function"};

// Whether `name` (len characters, not NUL-terminated) is one of the type names above.
bool known_type(const char* name, std::size_t len) {
  for (const char* t : type_names)
    if (std::strlen(t) == len && std::memcmp(t, name, len) == 0) return true;
  return false;
}

// Calls fn(token, len) for each alternative of a spec such as "string|table"; stops and
// returns false when fn does.
template <typename Fn>
bool each_alternative(const char* spec, Fn fn) {
  for (const char* p = spec;;) {
    const char* bar = std::strchr(p, '|');
    const std::size_t len = bar ? static_cast<std::size_t>(bar - p) : std::strlen(p);
    if (!fn(p, len)) return false;
    if (!bar) return true;
    p = bar + 1;
  }
}

bool type_matches(lua_State* L, const char* spec, int idx) {
  const char* actual = luaL_typename(L, idx);
  const std::size_t actual_len = std::strlen(actual);
  return !each_alternative(spec, [&](const char* t, std::size_t len) {
    return !(len == actual_len && std::memcmp(t, actual, len) == 0);
  });
}

// grain.optional(type [, default]) -> a marker for a defaults table: a setting that is off
// (nil, or `default`) unless given, and that takes a value of `type` ("number", "string",
// "boolean", "table", "function", or alternatives such as "string|table") or false.
int l_optional(lua_State* L) {
  const char* spec = luaL_checkstring(L, 1);
  const bool valid = *spec != '\0' && each_alternative(spec, [](const char* t, std::size_t len) {
    return known_type(t, len);
  });
  if (!valid)
    return luaL_argerror(L, 1,
                         lua_pushfstring(L,
                                         "'%s' is not a type (number, string, boolean, table, "
                                         "function, or several joined by '|')",
                                         spec));
  lua_settop(L, 2);
  if (!lua_isnil(L, 2) && !type_matches(L, spec, 2))
    return luaL_argerror(
        L, 2, lua_pushfstring(L, "the default is a %s, not a %s", luaL_typename(L, 2), spec));
  lua_newuserdatauv(L, 0, 2);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, -2, 2);
  luaL_setmetatable(L, optional_meta);
  return 1;
}

int l_optional_tostring(lua_State* L) {
  luaL_checkudata(L, 1, optional_meta);
  lua_settop(L, 1);
  lua_getiuservalue(L, 1, 1);  // 2: the type
  if (lua_getiuservalue(L, 1, 2) == LUA_TNIL) {
    lua_pushfstring(L, "grain.optional(\"%s\")", lua_tostring(L, 2));
  } else {
    luaL_tolstring(L, 3, nullptr);  // 4
    lua_pushfstring(L, "grain.optional(\"%s\", %s)", lua_tostring(L, 2), lua_tostring(L, 4));
  }
  return 1;
}

// Pushes "a, b, c": the names of the defaults at `defaults`, sorted.
void push_known_names(lua_State* L, int defaults) {
  lua_newtable(L);
  const int names = lua_gettop(L);
  lua_Integer n = 0;
  lua_pushnil(L);
  while (lua_next(L, defaults)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) continue;
    // Insertion sort: a policy has tens of settings.
    lua_Integer i = n;
    for (; i > 0; --i) {
      lua_rawgeti(L, names, i);
      const bool after = lua_compare(L, -2, -1, LUA_OPLT) != 0;
      if (!after) {
        lua_pop(L, 1);
        break;
      }
      lua_rawseti(L, names, i + 1);
    }
    lua_pushvalue(L, -1);
    lua_rawseti(L, names, i + 1);
    ++n;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (lua_Integer i = 1; i <= n; ++i) {
    if (i > 1) luaL_addstring(&b, ", ");
    lua_rawgeti(L, names, i);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  lua_remove(L, names);
}

// grain.settings(defaults, given) -> a table with every setting of `defaults`, the given ones
// replaced by their values from `given` (nil: none given).
int l_settings(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  if (!lua_isnoneornil(L, 2) && !lua_istable(L, 2))
    return luaL_typeerror(L, 2, "table of settings");
  lua_settop(L, 2);
  lua_newtable(L);
  const int result = 3;

  lua_pushnil(L);
  while (lua_next(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      return luaL_error(L, "grain.settings: the defaults are named by strings, not by %s (%s)",
                        luaL_typename(L, -2), luaL_tolstring(L, -2, nullptr));
    if (luaL_testudata(L, -1, optional_meta)) {
      lua_getiuservalue(L, -1, 2);  // its default; nil leaves the setting out
      lua_replace(L, -2);
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, result);
  }
  if (lua_isnil(L, 2)) return 1;

  lua_pushnil(L);
  while (lua_next(L, 2)) {
    const int key = lua_gettop(L) - 1;
    const int value = key + 1;
    lua_pushvalue(L, key);
    if (lua_rawget(L, 1) == LUA_TNIL) {
      const char* name = luaL_tolstring(L, key, nullptr);
      push_known_names(L, 1);
      return luaL_error(L, "unknown setting '%s' (known: %s)", name, lua_tostring(L, -1));
    }
    const int declared = value + 1;
    if (luaL_testudata(L, declared, optional_meta)) {
      lua_getiuservalue(L, declared, 1);
      const char* spec = lua_tostring(L, -1);
      const bool off = lua_type(L, value) == LUA_TBOOLEAN && !lua_toboolean(L, value);
      if (!off && !type_matches(L, spec, value))
        return luaL_error(L, "setting '%s' must be a %s or false, not a %s (%s)",
                          lua_tostring(L, key), spec, luaL_typename(L, value),
                          luaL_tolstring(L, value, nullptr));
    } else if (lua_type(L, value) != lua_type(L, declared)) {
      return luaL_error(L, "setting '%s' must be a %s like its default %s, not a %s (%s)",
                        lua_tostring(L, key), luaL_typename(L, declared),
                        luaL_tolstring(L, declared, nullptr), luaL_typename(L, value),
                        luaL_tolstring(L, value, nullptr));
    }
    lua_settop(L, value);
    lua_pushvalue(L, key);
    lua_insert(L, -2);
    lua_rawset(L, result);
  }
  return 1;
}

}  // namespace

void add_settings_functions(lua_State* L) {
  luaL_newmetatable(L, optional_meta);
  lua_pushcfunction(L, l_optional_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "read-only");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {
      {"settings", l_settings}, {"optional", l_optional}, {nullptr, nullptr}};
  luaL_setfuncs(L, funcs, 0);
}

}  // namespace grain::policy
