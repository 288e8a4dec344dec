// The sandboxed Lua state and the grain.* functions policies call. See docs/lua-api.md.
//
// Sandbox: only the base (without dofile/loadfile/load replaced by checked versions),
// table, string (without string.dump), math, utf8 and coroutine libraries. No os, io, debug,
// package. `load` compiles text only. `require`, `dofile` and `loadfile` read files from the
// module directories only. Every call into Lua runs under an instruction budget (count hook)
// and the state under a memory cap (its allocator).
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "engine_impl.hpp"
#include "grain/clock.hpp"
#include "grain/instrumentation/counters.hpp"

namespace grain::policy {

engine::impl* engine_of(lua_State* L) noexcept {
  return *static_cast<engine::impl**>(lua_getextraspace(L));
}

std::string basename_of(std::string_view path) {
  auto p = path.find_last_of('/');
  return std::string(p == std::string_view::npos ? path : path.substr(p + 1));
}

namespace {

constexpr const char* knob_meta = "grain.knob";
constexpr const char* tuner_meta = "grain.tuner";

// ---- limits --------------------------------------------------------------------------

void* limited_alloc(void* ud, void* ptr, std::size_t osize, std::size_t nsize) {
  auto* e = static_cast<engine::impl*>(ud);
  const std::size_t old = ptr ? osize : 0;
  const std::size_t used = e->mem_used.load(std::memory_order_relaxed);
  if (nsize == 0) {
    std::free(ptr);
    e->mem_used.store(used - old, std::memory_order_relaxed);
    return nullptr;
  }
  // Growth beyond the cap fails (Lua raises "not enough memory"); shrinking never fails.
  if (nsize > old && used - old + nsize > e->mem_limit) return nullptr;
  void* p = std::realloc(ptr, nsize);
  if (!p) return nullptr;
  e->mem_used.store(used - old + nsize, std::memory_order_relaxed);
  return p;
}

void budget_hook(lua_State* L, lua_Debug*) {
  engine::impl* e = engine_of(L);
  if (e->cut == cut_kind::none) {
    e->budget_used += static_cast<std::uint64_t>(lua_gethookcount(L));
    if (e->budget_used > e->opts.instruction_budget)
      e->cut = cut_kind::budget;
    else if (now_ns() > e->deadline_ns)
      e->cut = cut_kind::time;
    if (e->cut == cut_kind::none) {
      if (lua_gethookcount(L) != e->hook_granularity)
        lua_sethook(L, budget_hook, LUA_MASKCOUNT, e->hook_granularity);
      return;
    }
  }
  // From now on every instruction raises, so that pcall inside the rule cannot swallow it.
  lua_sethook(L, budget_hook, LUA_MASKCOUNT, 1);
  luaL_where(L, 0);
  if (e->cut == cut_kind::budget)
    lua_pushfstring(L, "instruction budget of %I exceeded (endless loop?)",
                    static_cast<lua_Integer>(e->opts.instruction_budget));
  else
    lua_pushfstring(L, "ran longer than the time limit of %I ms",
                    static_cast<lua_Integer>(e->opts.time_limit.count()));
  lua_concat(L, 2);
  lua_error(L);
}

// Errors raised inside C functions (math.max(nil, 1), a bad argument) carry no position:
// add the file:line of the innermost Lua function, so every rule error names its line.
int message_handler(lua_State* L) {
  const char* msg = lua_tostring(L, 1);
  if (!msg) msg = luaL_tolstring(L, 1, nullptr);
  std::string text = msg;
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); ++level) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    const std::string src = std::string(ar.short_src) + ":";
    if (text.compare(0, src.size(), src) != 0)  // not positioned yet
      text = src + std::to_string(ar.currentline) + ": " + text;
    break;
  }
  luaL_traceback(L, L, nullptr, 1);
  engine_of(L)->last_traceback = lua_tostring(L, -1);
  lua_pop(L, 1);
  lua_pushstring(L, text.c_str());
  return 1;
}

// ---- files -----------------------------------------------------------------------------

std::string real_path(const std::string& p) {
  char* r = ::realpath(p.c_str(), nullptr);
  if (!r) return {};
  std::string s(r);
  std::free(r);
  return s;
}

bool inside_module_dirs(engine::impl* e, const std::string& real) {
  for (auto& d : e->module_dirs)
    if (real.size() > d.size() && real.compare(0, d.size(), d) == 0 && real[d.size()] == '/')
      return true;
  return false;
}

std::string dirs_text(engine::impl* e) {
  std::string s;
  for (auto& d : e->module_dirs) s += (s.empty() ? "" : ", ") + d;
  return s.empty() ? "(none)" : s;
}

// A path or module name as the C library will see it: one with a NUL inside would be cut
// there ("name\0x" would load "name"), so it is refused.
const char* check_path_arg(lua_State* L, int idx, const char* what) {
  std::size_t len = 0;
  const char* s = luaL_checklstring(L, idx, &len);
  if (std::strlen(s) != len) luaL_error(L, "%s: a name with a NUL character is not allowed", what);
  return s;
}

// Pushes the compiled chunk of a file inside the module directories, or raises. The check is
// on the resolved path, so a symlink in a module directory cannot lead outside. (Lua errors
// longjmp past C++ destructors: no std::string may be alive where one is raised.)
void load_allowed_file(lua_State* L, const char* path) {
  engine::impl* e = engine_of(L);
  bool inside = false;
  {
    const std::string real = real_path(path);
    inside = !real.empty() && inside_module_dirs(e, real);
    lua_pushstring(L, inside ? real.c_str() : dirs_text(e).c_str());
  }
  if (!inside)
    luaL_error(L, "'%s' is outside the policy module directories (%s)", path, lua_tostring(L, -1));
  const int rc = luaL_loadfilex(L, lua_tostring(L, -1), "t");
  lua_remove(L, -2);
  if (rc != LUA_OK) lua_error(L);
}

int l_loadfile(lua_State* L) {
  load_allowed_file(L, check_path_arg(L, 1, "loadfile"));
  return 1;
}

int l_dofile(lua_State* L) {
  load_allowed_file(L, check_path_arg(L, 1, "dofile"));
  lua_call(L, 0, LUA_MULTRET);
  return lua_gettop(L) - 1;
}

// load(chunk [, chunkname [, mode [, env]]]) with mode forced to "t" (no bytecode).
int l_load(lua_State* L) {
  const int n = lua_gettop(L);
  if (n >= 3 && !lua_isnil(L, 3)) {
    const char* mode = luaL_checkstring(L, 3);
    if (std::strchr(mode, 'b') && !std::strchr(mode, 't'))
      luaL_error(L, "load: binary chunks are not allowed in policies");
  }
  lua_pushvalue(L, lua_upvalueindex(1));  // the original load
  lua_pushvalue(L, 1);
  if (n >= 2)
    lua_pushvalue(L, 2);
  else
    lua_pushnil(L);
  lua_pushliteral(L, "t");
  int args = 3;
  if (n >= 4) {
    lua_pushvalue(L, 4);
    ++args;
  }
  lua_call(L, args, 2);
  return 2;
}

// require(name): modules from the module directories only, cached. The strings live on the
// Lua stack, since Lua errors skip C++ destructors.
int l_require(lua_State* L) {
  engine::impl* e = engine_of(L);
  const char* name = check_path_arg(L, 1, "require");
  for (const char* c = name; *c; ++c)
    if (!(std::isalnum(static_cast<unsigned char>(*c)) || *c == '_' || *c == '.' || *c == '-'))
      return luaL_error(L, "require: invalid module name '%s'", name);
  lua_settop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, "grain.loaded");  // 2
  if (lua_getfield(L, 2, name) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  const char* rel = luaL_gsub(L, name, ".", "/");  // 3
  bool found = false;
  for (std::size_t i = 0; i < e->module_dirs.size() && !found; ++i) {
    lua_pushfstring(L, "%s/%s.lua", e->module_dirs[i].c_str(), rel);  // 4
    found = ::access(lua_tostring(L, 4), R_OK) == 0;
    if (!found) lua_pop(L, 1);
  }
  if (!found) {
    lua_pushstring(L, dirs_text(e).c_str());
    return luaL_error(L, "module '%s' not found in the policy module directories (%s)", name,
                      lua_tostring(L, -1));
  }
  load_allowed_file(L, lua_tostring(L, 4));
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, 2, name);
  return 1;
}

// The message handler of xpcall runs with debug hooks off when the error comes from the
// budget hook, so a handler that loops would escape the budget and the time limit. Once a
// call is cut, the policy's handler is skipped and the error goes on as it is.
int xpcall_handler(lua_State* L) {
  if (engine_of(L)->cut != cut_kind::none) {
    lua_settop(L, 1);
    return 1;
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

int xpcall_done(lua_State* L, int, lua_KContext nargs) {
  return lua_gettop(L) - static_cast<int>(nargs);
}

// xpcall(f, msgh, ...) with msgh behind xpcall_handler; yields still pass (lua_callk).
int l_xpcall(lua_State* L) {
  const int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  luaL_checkstack(L, n + 1, "too many arguments to xpcall");
  lua_pushvalue(L, lua_upvalueindex(1));  // the original xpcall
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, xpcall_handler, 1);
  for (int i = 3; i <= n; ++i) lua_pushvalue(L, i);
  lua_callk(L, n, LUA_MULTRET, n, xpcall_done);
  return xpcall_done(L, LUA_OK, n);
}

// Finalizers run inside the garbage collector with debug hooks off, where neither the budget
// nor the time limit can stop them (and lua_close runs them too): policies cannot have any.
// Only a __gc present when setmetatable is called makes an object finalizable.
int l_setmetatable(lua_State* L) {
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    const bool gc = lua_rawget(L, 2) != LUA_TNIL;
    lua_pop(L, 1);
    if (gc)
      return luaL_error(L,
                        "setmetatable: __gc finalizers are not allowed in policies (they run "
                        "inside the garbage collector, beyond the time limit)");
  }
  lua_pushvalue(L, lua_upvalueindex(1));  // the original setmetatable
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

int l_collectgarbage(lua_State* L) {
  const char* opt = luaL_optstring(L, 1, "collect");
  if (std::strcmp(opt, "count") == 0) {
    lua_pushnumber(L, static_cast<lua_Number>(lua_gc(L, LUA_GCCOUNT, 0)) +
                          static_cast<lua_Number>(lua_gc(L, LUA_GCCOUNTB, 0)) / 1024.0);
    return 1;
  }
  if (std::strcmp(opt, "collect") == 0) {
    lua_gc(L, LUA_GCCOLLECT, 0);
    lua_pushinteger(L, 0);
    return 1;
  }
  return luaL_error(L, "collectgarbage('%s') is not allowed in policies (use 'count' or 'collect')",
                    opt);
}

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

std::string rule_label(engine::impl* e) {
  if (e->cur_rule) return e->cur_rule->name;
  return e->load_rule_name.empty() ? std::string("policy") : e->load_rule_name;
}

template <spdlog::level::level_enum Level>
int l_log(lua_State* L) {
  engine::impl* e = engine_of(L);
  spdlog::log(Level, "grain: policy [{}] {}", rule_label(e), concat_args(L));
  return 0;
}

// ---- read-only API ----------------------------------------------------------------------
// All policies share one state and its globals. The libraries and the grain table are
// read-only proxies and their global names cannot be assigned, so that one policy cannot
// break the rules of another (grain.knob = ..., string.format = nil, grain = {}). The
// policies' own globals stay shared, as before.

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

// ---- counters --------------------------------------------------------------------------

// grain.counter(name) -> value, true | nil, false
int l_counter(lua_State* L) {
  engine::impl* e = engine_of(L);
  std::size_t len = 0;
  const char* name = luaL_checklstring(L, 1, &len);
  const instrumentation::counter_value* c = e->find_counter(std::string_view(name, len));
  if (!c || !c->available) {
    lua_pushnil(L);
    lua_pushboolean(L, 0);
    return 2;
  }
  e->note_read(c->name, c->value);
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
  for (auto& c : e->cur.values) {
    if (!c.available || !p->matches(std::string_view(c.name))) continue;
    e->note_read(c.name, c.value);
    lua_pushnumber(L, c.value);
    lua_setfield(L, -2, c.name.c_str());
  }
  return 1;
}

int l_time(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(now_ns()) * 1e-9);
  return 1;
}

// ---- knobs -----------------------------------------------------------------------------

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
  auto** ud = static_cast<knob**>(lua_newuserdatauv(L, sizeof(knob*), 0));
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
    r = e->set_knob(*k, requested, reason, true);
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

// ---- triggers --------------------------------------------------------------------------

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

int make_ref(lua_State* L, int idx) {
  lua_pushvalue(L, idx);
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

// grain.every(ms, fn [, name]) -> id
int l_every(lua_State* L) {
  engine::impl* e = engine_of(L);
  const double ms = luaL_checknumber(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  if (!(ms >= 1)) return luaL_error(L, "grain.every: the period must be >= 1 ms");
  auto r = std::make_unique<rule>();
  r->kind = rule_kind::every;
  r->name = function_name(L, 2, 3);
  r->period_ns = static_cast<std::uint64_t>(ms * 1e6);
  r->next_due = now_ns() + r->period_ns;
  char buf[64];
  std::snprintf(buf, sizeof buf, "every %g ms", ms);
  r->trigger = buf;
  r->lua_ref = make_ref(L, 2);
  lua_pushinteger(L, e->add_rule(std::move(r)));
  return 1;
}

// grain.on(event, fn [, name]) -> id
int l_on(lua_State* L) {
  engine::impl* e = engine_of(L);
  const char* ev = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  auto r = std::make_unique<rule>();
  r->kind = rule_kind::on;
  r->event = ev;
  r->name = function_name(L, 2, 3);
  r->trigger = std::string("on ") + ev;
  r->lua_ref = make_ref(L, 2);
  lua_pushinteger(L, e->add_rule(std::move(r)));
  return 1;
}

// grain.when(counter, op, value, fn [, name]) -> id
int l_when(lua_State* L) {
  engine::impl* e = engine_of(L);
  const char* counter = luaL_checkstring(L, 1);
  std::string op = luaL_checkstring(L, 2);
  const double v = luaL_checknumber(L, 3);
  luaL_checktype(L, 4, LUA_TFUNCTION);
  static const char* ops[] = {"<", "<=", ">", ">=", "==", "~="};
  int opi = -1;
  for (int i = 0; i < 6; ++i)
    if (op == ops[i]) opi = i;
  if (op == "!=") opi = 5;
  if (opi < 0)
    return luaL_error(L, "grain.when: operator '%s' is not one of < <= > >= == ~=", op.c_str());
  auto r = std::make_unique<rule>();
  r->kind = rule_kind::when;
  r->counter = counter;
  r->op = opi;
  r->threshold = v;
  r->name = function_name(L, 4, 5);
  char buf[64];
  std::snprintf(buf, sizeof buf, " %s %g", ops[opi], v);
  r->trigger = "when " + r->counter + buf;
  r->lua_ref = make_ref(L, 4);
  lua_pushinteger(L, e->add_rule(std::move(r)));
  return 1;
}

int l_cancel(lua_State* L) {
  engine_of(L)->remove(static_cast<int>(luaL_checkinteger(L, 1)));
  return 0;
}

// ---- grain.tune{...} -------------------------------------------------------------------

// grain.tune parses into C++ objects, and Lua errors longjmp past their destructors: the
// parsing reports bad input with C++ exceptions, and l_tune raises the Lua error after every
// C++ object is gone.
double opt_number(lua_State* L, int t, const char* key, double def) {
  lua_getfield(L, t, key);
  int isnum = 1;
  const double v = lua_isnil(L, -1) ? def : lua_tonumberx(L, -1, &isnum);
  lua_pop(L, 1);
  if (!isnum) throw std::invalid_argument(std::string("'") + key + "' must be a number");
  return v;
}

std::string opt_string(lua_State* L, int t, const char* key, const char* def) {
  lua_getfield(L, t, key);
  const bool nil = lua_isnil(L, -1), text = lua_isstring(L, -1);
  std::string v = nil ? std::string(def) : text ? std::string(lua_tostring(L, -1)) : "";
  lua_pop(L, 1);
  if (!nil && !text) throw std::invalid_argument(std::string("'") + key + "' must be a string");
  return v;
}

tuning::parameter knob_parameter(const std::string& name) {
  knob* k = knobs().find(name);
  if (!k)
    throw std::invalid_argument("no knob named '" + name + "' (known knobs: " + knobs().names() +
                                ")");
  return tuning::parameter::from_knob(*k);
}

tune_request parse_tune(lua_State* L) {
  tune_request req;
  lua_getfield(L, 1, "knobs");
  if (!lua_istable(L, -1)) throw std::invalid_argument("'knobs' must be a list of knobs");
  const lua_Integer n = luaL_len(L, -1);
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, -1, i);
    if (lua_type(L, -1) == LUA_TSTRING) {
      req.parameters.push_back(knob_parameter(lua_tostring(L, -1)));
    } else if (lua_istable(L, -1)) {
      const int t = lua_gettop(L);
      std::string name = opt_string(L, t, "name", "");
      tuning::parameter p = knob_parameter(name);
      // A narrower range than the knob's; values outside the knob's range are clamped.
      p.min = std::max(p.min, opt_number(L, t, "min", p.min));
      p.max = std::min(p.max, opt_number(L, t, "max", p.max));
      p.step = opt_number(L, t, "step", p.step);
      if (p.type == knob_type::integer && p.step < 1) p.step = 1;
      if (p.min > p.max) throw std::invalid_argument("knob " + name + ": min > max");
      p.initial = std::clamp(opt_number(L, t, "start", p.initial), p.min, p.max);
      req.parameters.push_back(std::move(p));
    } else {
      throw std::invalid_argument("knobs[" + std::to_string(i) +
                                  "] must be a knob name or {name=..., min=...}");
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (req.parameters.empty()) throw std::invalid_argument("no knob to tune");
  req.metric = opt_string(L, 1, "metric", "");
  if (req.metric.empty())
    throw std::invalid_argument("'metric' (a counter or an event payload field) is required");
  const std::string goal = opt_string(L, 1, "goal", "min");
  if (goal != "min" && goal != "max")
    throw std::invalid_argument("goal must be \"min\" or \"max\"");
  req.maximize = goal == "max";
  req.strategy = opt_string(L, 1, "strategy", "nelder_mead");
  lua_getfield(L, 1, "trigger");
  const int trigger_type = lua_type(L, -1);
  const double ms = trigger_type == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
  if (trigger_type == LUA_TSTRING) req.trigger = lua_tostring(L, -1);
  lua_pop(L, 1);
  if (trigger_type == LUA_TNUMBER) {
    if (!(ms >= 1)) throw std::invalid_argument("a periodic trigger must be >= 1 ms");
    req.trigger.clear();
    req.period = std::chrono::milliseconds(static_cast<long long>(ms));
  } else if (trigger_type != LUA_TSTRING && trigger_type != LUA_TNIL) {
    throw std::invalid_argument("trigger must be \"sample\", an event name or ms");
  }
  if (!tune_metric_fits_trigger(req))
    throw std::invalid_argument("metric '" + req.metric +
                                "' is an event field, but the trigger brings no event: use a "
                                "counter name (/...) or trigger = \"event name\"");
  req.window = static_cast<std::size_t>(std::max(1.0, opt_number(L, 1, "window", 3)));
  req.skip = static_cast<std::size_t>(std::max(0.0, opt_number(L, 1, "skip", 1)));
  req.options.budget = static_cast<std::size_t>(std::max(0.0, opt_number(L, 1, "budget", 0)));
  req.options.seed = static_cast<std::uint64_t>(opt_number(L, 1, "seed", 42));
  req.options.double_levels =
      static_cast<std::size_t>(std::max(2.0, opt_number(L, 1, "levels", 11)));
  const std::string agg = opt_string(L, 1, "aggregate", "median");
  if (agg != "median" && agg != "mean")
    throw std::invalid_argument("aggregate must be \"median\" or \"mean\"");
  req.median = agg == "median";
  req.name = opt_string(L, 1, "name", "");
  if (req.name.empty()) {
    lua_Debug ar;
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) &&
        (ar.source[0] == '@' || ar.source[0] == '='))
      req.name = "tune@" + basename_of(ar.source + 1) + ":" + std::to_string(ar.currentline);
    else
      req.name = "tune";
  }
  return req;
}

// Adds the tuner; returns its id, or 0 with the reason in `err`.
int add_tuner_rule(lua_State* L, char (&err)[2048]) {
  engine::impl* e = engine_of(L);
  int on_done = LUA_NOREF;
  try {
    tune_request req = parse_tune(L);
    lua_getfield(L, 1, "on_done");
    if (lua_isfunction(L, -1))
      on_done = luaL_ref(L, LUA_REGISTRYINDEX);
    else
      lua_pop(L, 1);
    auto r = std::make_unique<rule>();
    r->kind = rule_kind::tuner;
    r->name = req.name;
    r->trigger = req.trigger.empty() ? "every " + std::to_string(req.period.count()) + " ms"
                                     : "on " + req.trigger;
    r->tuner = std::make_unique<tuner_state>();
    r->tuner->search = tuning::make_strategy(req.strategy, req.parameters, req.options);
    for (auto& p : req.parameters) r->tuner->knobs.push_back(&knobs().at(p.name));
    r->tuner->lua_on_done = on_done;
    if (req.trigger.empty()) {
      r->period_ns = static_cast<std::uint64_t>(req.period.count()) * 1'000'000ull;
      r->next_due = now_ns() + r->period_ns;
    }
    r->tuner->req = std::move(req);
    return e->add_rule(std::move(r));
  } catch (const std::exception& ex) {
    e->unref(on_done);
    std::snprintf(err, sizeof err, "%s", ex.what());
    return 0;
  }
}

int l_tune(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  char err[2048] = "";
  const int id = add_tuner_rule(L, err);
  if (id == 0) return luaL_error(L, "grain.tune: %s", err);
  lua_pushinteger(L, id);
  return 1;
}

void set_funcs(lua_State* L, const luaL_Reg* regs) {
  luaL_setfuncs(L, regs, 0);
}

// grain.reset_counters(): every counter starts again from zero, so that what the next
// snapshots hold is the behaviour since this call (docs/lua-api.md).
int l_reset_counters(lua_State*) {
  instrumentation::registry().reset();
  return 0;
}

}  // namespace

void engine::impl::unref(int ref) {
  if (ref != LUA_NOREF && L) luaL_unref(L, LUA_REGISTRYINDEX, ref);
}

namespace {

// The libraries and the grain table; run under lua_pcall, since any of it can run out of
// memory under a small --grain:policy-memory.
int open_libs(lua_State* L) {
  engine::impl* e = engine_of(L);
  static const luaL_Reg libs[] = {
      {LUA_GNAME, luaopen_base},        {LUA_TABLIBNAME, luaopen_table},
      {LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math},
      {LUA_UTF8LIBNAME, luaopen_utf8},  {LUA_COLIBNAME, luaopen_coroutine}};
  for (auto& l : libs) {
    luaL_requiref(L, l.name, l.func, 1);
    lua_pop(L, 1);
  }
  // Sandbox the base library.
  lua_getglobal(L, "load");
  lua_pushcclosure(L, l_load, 1);
  lua_setglobal(L, "load");
  lua_pushcfunction(L, l_loadfile);
  lua_setglobal(L, "loadfile");
  lua_pushcfunction(L, l_dofile);
  lua_setglobal(L, "dofile");
  lua_pushcfunction(L, l_require);
  lua_setglobal(L, "require");
  lua_pushcfunction(L, l_collectgarbage);
  lua_setglobal(L, "collectgarbage");
  lua_getglobal(L, "xpcall");
  lua_pushcclosure(L, l_xpcall, 1);
  lua_setglobal(L, "xpcall");
  lua_getglobal(L, "setmetatable");
  lua_pushcclosure(L, l_setmetatable, 1);
  lua_setglobal(L, "setmetatable");
  lua_pushcfunction(L, l_log<spdlog::level::info>);
  lua_setglobal(L, "print");
  lua_getglobal(L, "string");
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  lua_pop(L, 1);
  // package.loaded is gone with package: require keeps its own cache.
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "grain.loaded");

  // Knob userdata.
  luaL_newmetatable(L, knob_meta);
  static const luaL_Reg knob_methods[] = {{"set", l_knob_set},           {"get", l_knob_get},
                                          {"value", l_knob_index_value}, {"name", l_knob_name},
                                          {"info", l_knob_info},         {nullptr, nullptr}};
  lua_newtable(L);
  set_funcs(L, knob_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_knob_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  luaL_newmetatable(L, tuner_meta);
  lua_pop(L, 1);

  // The grain table.
  static const luaL_Reg grain_funcs[] = {
      {"every", l_every},   {"on", l_on},           {"when", l_when},
      {"cancel", l_cancel}, {"counter", l_counter}, {"counters", l_counters},
      {"knob", l_knob},     {"knobs", l_knobs},     {"tune", l_tune},
      {"time", l_time},     {nullptr, nullptr}};
  lua_newtable(L);
  set_funcs(L, grain_funcs);
  lua_pushcfunction(L, l_reset_counters);
  lua_setfield(L, -2, "reset_counters");
  static const luaL_Reg log_funcs[] = {{"debug", l_log<spdlog::level::debug>},
                                       {"info", l_log<spdlog::level::info>},
                                       {"warn", l_log<spdlog::level::warn>},
                                       {"error", l_log<spdlog::level::err>},
                                       {nullptr, nullptr}};
  lua_newtable(L);
  set_funcs(L, log_funcs);
  lua_setfield(L, -2, "log");
  lua_setglobal(L, "grain");

  lock_api(L);
  lua_pushcfunction(L, message_handler);
  e->msgh_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

// Runs with the arguments on the Lua side of the protected call, so that running out of
// memory while pushing them is an error of the call, not a panic.
struct call_request {
  int ref;
  const std::function<int(lua_State*)>* push_args;
};

int protected_call(lua_State* L) {
  auto* req = static_cast<const call_request*>(lua_touserdata(L, 1));
  lua_settop(L, 0);
  lua_rawgeti(L, LUA_REGISTRYINDEX, req->ref);
  const int nargs = *req->push_args ? (*req->push_args)(L) : 0;
  lua_call(L, nargs, 0);
  return 0;
}

struct load_request {
  std::string_view code;
  const char* name;  // file name, or chunk name for code
  bool is_file;
};

int protected_load(lua_State* L) {
  auto* req = static_cast<const load_request*>(lua_touserdata(L, 1));
  const int rc = req->is_file
                     ? luaL_loadfilex(L, req->name, "t")
                     : luaL_loadbufferx(L, req->code.data(), req->code.size(), req->name, "t");
  if (rc != LUA_OK) lua_error(L);
  return 1;
}

// The message of a failed lua_pcall (a string: our handler makes one; Lua's own are strings).
std::string error_text(lua_State* L) {
  return lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "unknown error";
}

}  // namespace

void engine::impl::open_state() {
  mem_limit = opts.memory_limit;
  L = lua_newstate(limited_alloc, this);
  if (!L) throw std::runtime_error("grain: cannot create the Lua state (memory limit too small?)");
  *static_cast<engine::impl**>(lua_getextraspace(L)) = this;
  hook_granularity =
      static_cast<int>(std::clamp<std::uint64_t>(opts.instruction_budget / 4, 1, 1000));
  lua_sethook(L, budget_hook, LUA_MASKCOUNT, hook_granularity);
  lua_pushcfunction(L, open_libs);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
    const std::string msg = error_text(L);
    lua_close(L);
    L = nullptr;
    throw std::runtime_error("grain: cannot set up the Lua state: " + msg +
                             " (memory limit too small?)");
  }
}

void engine::impl::load(std::string_view code, const std::string& chunk, bool is_file) {
  if (abandoned.load()) throw policy_error(chunk + ": the policy thread was abandoned");
  std::lock_guard lk(state_m);
  lua_settop(L, 0);
  const std::string name = is_file ? chunk : "=" + chunk;
  const load_request req{code, name.c_str(), is_file};
  lua_pushcfunction(L, protected_load);
  lua_pushlightuserdata(L, const_cast<load_request*>(&req));
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    std::string msg = error_text(L);
    lua_settop(L, 0);
    throw policy_error(msg);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, msgh_ref);
  lua_insert(L, 1);
  start_limits();
  load_rule_name = basename_of(chunk);
  reads.clear();
  const int rc = lua_pcall(L, 0, 0, 1);
  load_rule_name.clear();
  if (rc != LUA_OK) {
    std::string msg = error_text(L);
    lua_settop(L, 0);
    throw policy_error(msg);
  }
  lua_settop(L, 0);
}

void engine::impl::start_limits() {
  budget_used = 0;
  cut = cut_kind::none;
  deadline_ns = now_ns() + static_cast<std::uint64_t>(opts.time_limit.count()) * 1'000'000ull;
  lua_sethook(L, budget_hook, LUA_MASKCOUNT, hook_granularity);
}

bool engine::impl::call_lua(rule& r, int ref, const std::function<int(lua_State*)>& push_args) {
  const bool outer = begin_call(r);
  lua_settop(L, 0);
  lua_rawgeti(L, LUA_REGISTRYINDEX, msgh_ref);
  lua_pushcfunction(L, protected_call);
  const call_request req{ref, &push_args};
  lua_pushlightuserdata(L, const_cast<call_request*>(&req));
  start_limits();
  rule* saved = cur_rule;
  cur_rule = &r;
  const int rc = lua_pcall(L, 1, 0, 1);
  cur_rule = saved;
  if (outer) end_call();
  if (rc != LUA_OK) {
    std::string msg = error_text(L);
    lua_settop(L, 0);
    // A rule that ran for a whole time limit would hold up every other rule each time.
    record_error(r, msg, cut == cut_kind::time ? "it ran past the time limit" : nullptr);
    return false;
  }
  lua_settop(L, 0);
  return true;
}

void engine::impl::push_event_table(const instrumentation::app_event& e) {
  lua_createtable(L, 0, static_cast<int>(e.payload.size()));
  for (auto& [k, v] : e.payload) {
    if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0)  // 2^53: integers print as such
      lua_pushinteger(L, static_cast<lua_Integer>(v));
    else
      lua_pushnumber(L, v);
    lua_setfield(L, -2, k.c_str());
  }
}

}  // namespace grain::policy
