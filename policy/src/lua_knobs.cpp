// grain.knob, grain.knobs and the knob object's methods (set, get, value, name, info).
// A knob:set is a decision, recorded with the rule that makes it.
#include "engine_impl.hpp"
#include "lua_api.hpp"

namespace grain::policy {
namespace {

knob* check_knob(lua_State* L, int idx) {
  return *static_cast<knob**>(luaL_checkudata(L, idx, knob_meta));
}

void push_knob_value(lua_State* L, const knob& k, double v) {
  switch (k.type()) {
    case knob_type::integer:
      lua_pushinteger(L, static_cast<lua_Integer>(v));
      break;
    case knob_type::real:
      lua_pushnumber(L, v);
      break;
    case knob_type::enumeration:
      lua_pushstring(L, k.format(v).c_str());
      break;
  }
}

int l_knob(lua_State* L) {
  std::size_t len = 0;
  const char* name = luaL_checklstring(L, 1, &len);
  knob* k = knobs().find(std::string_view(name, len));
  if (!k) {
    lua_pushstring(L, knobs().names().c_str());  // no C++ string may outlive a Lua error
    return luaL_error(L, "no knob named '%s' (known knobs: %s)", name, lua_tostring(L, -1));
  }
  // The userdata holds a pointer to the knob (knobs live as long as the registry).
  auto** ud = static_cast<knob**>(
      lua_newuserdatauv(L, sizeof(knob*), 0));  // NOLINT(bugprone-sizeof-expression)
  *ud = k;
  luaL_setmetatable(L, knob_meta);
  return 1;
}

int l_knobs(lua_State* L) {
  lua_newtable(L);
  lua_Integer i = 1;
  for (knob* k : knobs().all()) {
    lua_pushstring(L, k->name().c_str());
    lua_rawseti(L, -2, i++);
  }
  return 1;
}

// knob:set(value [, reason]) -> new value, clamped
int l_knob_set(lua_State* L) {
  engine::impl* e = engine_of(L);
  knob* k = check_knob(L, 1);
  double requested = 0;
  if (lua_type(L, 2) == LUA_TSTRING) {
    try {
      requested = k->parse(lua_tostring(L, 2));
    } catch (const std::exception& ex) {
      return luaL_error(L, "%s", ex.what());
    }
  } else {
    requested = luaL_checknumber(L, 2);
  }
  const char* reason = luaL_optstring(L, 3, "");
  decision_record r;
  try {
    r = e->decisions.set_knob(*k, requested, reason, true);
  } catch (const std::exception& ex) {
    return luaL_error(L, "knob %s: %s", k->name().c_str(), ex.what());
  }
  push_knob_value(L, *k, k->value());
  lua_pushboolean(L, r.clamped);
  return 2;
}

int l_knob_get(lua_State* L) {
  knob* k = check_knob(L, 1);
  push_knob_value(L, *k, k->value());
  return 1;
}

int l_knob_index_value(lua_State* L) {  // numeric value (enumeration index)
  lua_pushnumber(L, check_knob(L, 1)->value());
  return 1;
}

int l_knob_name(lua_State* L) {
  lua_pushstring(L, check_knob(L, 1)->name().c_str());
  return 1;
}

int l_knob_info(lua_State* L) {
  knob* k = check_knob(L, 1);
  lua_newtable(L);
  lua_pushstring(L, k->name().c_str());
  lua_setfield(L, -2, "name");
  const char* t = k->type() == knob_type::integer ? "int"
                  : k->type() == knob_type::real  ? "double"
                                                  : "enum";
  lua_pushstring(L, t);
  lua_setfield(L, -2, "type");
  push_knob_value(L, *k, k->min());
  lua_setfield(L, -2, "min");
  push_knob_value(L, *k, k->max());
  lua_setfield(L, -2, "max");
  lua_pushnumber(L, k->step());
  lua_setfield(L, -2, "step");
  push_knob_value(L, *k, k->default_value());
  lua_setfield(L, -2, "default");
  push_knob_value(L, *k, k->value());
  lua_setfield(L, -2, "value");
  lua_pushstring(L, k->description().c_str());
  lua_setfield(L, -2, "description");
  lua_pushstring(L, k->describe_range().c_str());
  lua_setfield(L, -2, "range");
  lua_newtable(L);
  lua_Integer i = 1;
  for (auto& v : k->enum_values()) {
    lua_pushstring(L, v.c_str());
    lua_rawseti(L, -2, i++);
  }
  lua_setfield(L, -2, "values");
  return 1;
}

int l_knob_tostring(lua_State* L) {
  knob* k = check_knob(L, 1);
  lua_pushfstring(L, "knob %s = %s", k->name().c_str(), k->format(k->value()).c_str());
  return 1;
}
}  // namespace

void add_knob_functions(lua_State* L) {
  luaL_newmetatable(L, knob_meta);
  static const luaL_Reg methods[] = {{"set", l_knob_set},           {"get", l_knob_get},
                                     {"value", l_knob_index_value}, {"name", l_knob_name},
                                     {"info", l_knob_info},         {nullptr, nullptr}};
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_knob_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {{"knob", l_knob}, {"knobs", l_knobs}, {nullptr, nullptr}};
  luaL_setfuncs(L, funcs, 0);
}

}  // namespace grain::policy
