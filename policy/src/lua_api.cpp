// The grain table assembled from the binding files, grain.log (and print), and the helpers
// the bindings share. See docs/lua-api.md.
#include "lua_api.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <string>

#include "engine_impl.hpp"
#include "grain/instrumentation/counters.hpp"

namespace grain::policy {

std::string basename_of(std::string_view path) {
  auto p = path.find_last_of('/');
  return std::string(p == std::string_view::npos ? path : path.substr(p + 1));
}

void push_event_table(lua_State* L, const instrumentation::app_event& e) {
  lua_createtable(L, 0, static_cast<int>(e.payload.size()));
  for (auto& [k, v] : e.payload) {
    if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0)  // 2^53: integers print as such
      lua_pushinteger(L, static_cast<lua_Integer>(v));
    else
      lua_pushnumber(L, v);
    lua_setfield(L, -2, k.c_str());
  }
}

namespace {

std::string concat_args(lua_State* L) {
  std::string s;
  const int n = lua_gettop(L);
  for (int i = 1; i <= n; ++i) {
    std::size_t len = 0;
    const char* p = luaL_tolstring(L, i, &len);
    if (i > 1) s += ' ';
    s.append(p, len);
    lua_pop(L, 1);
  }
  return s;
}

template <spdlog::level::level_enum Level>
int l_log(lua_State* L) {
  spdlog::log(Level, "grain: policy [{}] {}", engine_of(L)->decisions.rule_name(), concat_args(L));
  return 0;
}

}  // namespace

void open_grain_api(lua_State* L) {
  lua_pushcfunction(L, l_log<spdlog::level::info>);
  lua_setglobal(L, "print");
  lua_newtable(L);
  add_trigger_functions(L);
  add_tune_function(L);
  add_knob_functions(L);
  add_counter_functions(L);
  add_settings_functions(L);
  static const luaL_Reg log_funcs[] = {{"debug", l_log<spdlog::level::debug>},
                                       {"info", l_log<spdlog::level::info>},
                                       {"warn", l_log<spdlog::level::warn>},
                                       {"error", l_log<spdlog::level::err>},
                                       {nullptr, nullptr}};
  lua_newtable(L);
  luaL_setfuncs(L, log_funcs, 0);
  lua_setfield(L, -2, "log");
  // This process's locality (MPI rank), for counter instances: "locality#" .. grain.locality.
  lua_pushinteger(L, instrumentation::here_locality());
  lua_setfield(L, -2, "locality");
  lua_setglobal(L, "grain");
}

}  // namespace grain::policy
