// The Lua state's lifetime, its limits (memory cap, instruction budget, deadline) and the
// base library with its escape hatches closed. See lua_sandbox.hpp.
#include "lua_sandbox.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "grain/clock.hpp"
#include "lua_api.hpp"

namespace grain::policy {

lua_sandbox& sandbox_of(lua_State* L) noexcept {
  return **static_cast<lua_sandbox**>(lua_getextraspace(L));
}

engine::impl* engine_of(lua_State* L) noexcept {
  return &sandbox_of(L).host();
}

namespace {

// ---- limits --------------------------------------------------------------------------

void* limited_alloc(void* ud, void* ptr, std::size_t osize, std::size_t nsize) {
  auto* s = static_cast<lua_sandbox*>(ud);
  const std::size_t old = ptr ? osize : 0;
  const std::size_t used = s->mem_used.load(std::memory_order_relaxed);
  if (nsize == 0) {
    std::free(ptr);
    s->mem_used.store(used - old, std::memory_order_relaxed);
    return nullptr;
  }
  // Growth beyond the cap fails (Lua raises "not enough memory"); shrinking never fails.
  if (nsize > old && used - old + nsize > s->mem_limit) return nullptr;
  void* p = std::realloc(ptr, nsize);
  if (!p) return nullptr;
  s->mem_used.store(used - old + nsize, std::memory_order_relaxed);
  return p;
}

void budget_hook(lua_State* L, lua_Debug*) {
  lua_sandbox& s = sandbox_of(L);
  if (s.cut_now == cut_kind::none) {
    s.budget_used += static_cast<std::uint64_t>(lua_gethookcount(L));
    if (s.stop_requested.load(std::memory_order_relaxed))
      s.cut_now = cut_kind::stop;
    else if (s.budget_used > s.instruction_budget)
      s.cut_now = cut_kind::budget;
    else if (now_ns() > s.deadline_ns)
      s.cut_now = cut_kind::time;
    if (s.cut_now == cut_kind::none) {
      if (lua_gethookcount(L) != s.hook_granularity)
        lua_sethook(L, budget_hook, LUA_MASKCOUNT, s.hook_granularity);
      return;
    }
  }
  // From now on every instruction raises, so that pcall inside the rule cannot swallow it.
  lua_sethook(L, budget_hook, LUA_MASKCOUNT, 1);
  luaL_where(L, 0);
  if (s.cut_now == cut_kind::budget)
    lua_pushfstring(L, "instruction budget of %I exceeded (endless loop?)",
                    static_cast<lua_Integer>(s.instruction_budget));
  else if (s.cut_now == cut_kind::time)
    lua_pushfstring(L, "ran longer than the time limit of %I ms",
                    static_cast<lua_Integer>(s.time_limit.count()));
  else
    lua_pushliteral(L, "cut short: the program is ending on a signal");
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
  sandbox_of(L).last_traceback = lua_tostring(L, -1);
  lua_pop(L, 1);
  lua_pushstring(L, text.c_str());
  return 1;
}

// ---- the base library, checked ---------------------------------------------------------

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

// The message handler of xpcall runs with debug hooks off when the error comes from the
// budget hook, so a handler that loops would escape the budget and the time limit. Once a
// call is cut, the policy's handler is skipped and the error goes on as it is.
int xpcall_handler(lua_State* L) {
  if (sandbox_of(L).cut_now != cut_kind::none) {
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

// The libraries and the grain table; run under lua_pcall, since any of it can run out of
// memory under a small --grain:policy-memory.
int open_libs(lua_State* L) {
  static const luaL_Reg libs[] = {
      {LUA_GNAME, luaopen_base},        {LUA_TABLIBNAME, luaopen_table},
      {LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math},
      {LUA_UTF8LIBNAME, luaopen_utf8},  {LUA_COLIBNAME, luaopen_coroutine}};
  for (auto& l : libs) {
    luaL_requiref(L, l.name, l.func, 1);
    lua_pop(L, 1);
  }
  lua_getglobal(L, "load");
  lua_pushcclosure(L, l_load, 1);
  lua_setglobal(L, "load");
  install_module_loaders(L);
  lua_pushcfunction(L, l_collectgarbage);
  lua_setglobal(L, "collectgarbage");
  lua_getglobal(L, "xpcall");
  lua_pushcclosure(L, l_xpcall, 1);
  lua_setglobal(L, "xpcall");
  lua_getglobal(L, "setmetatable");
  lua_pushcclosure(L, l_setmetatable, 1);
  lua_setglobal(L, "setmetatable");
  lua_getglobal(L, "string");
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  lua_pop(L, 1);

  open_grain_api(L);

  lock_api(L);
  lua_pushcfunction(L, message_handler);
  sandbox_of(L).msgh_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

// Runs with the arguments on the Lua side of the protected call, so that running out of
// memory while pushing them is an error of the call, not a panic.
struct call_request {
  int ref;
  const push_args_fn* push_args;
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

lua_sandbox::lua_sandbox(engine::impl& host, const engine_options& opts, const module_dirs& dirs)
    : instruction_budget(opts.instruction_budget),
      time_limit(opts.time_limit),
      mem_limit(opts.memory_limit),
      host_(host),
      dirs_(dirs) {
  L_ = lua_newstate(limited_alloc, this);
  if (!L_) throw std::runtime_error("grain: cannot create the Lua state (memory limit too small?)");
  *static_cast<lua_sandbox**>(lua_getextraspace(L_)) = this;
  hook_granularity = static_cast<int>(std::clamp<std::uint64_t>(instruction_budget / 4, 1, 1000));
  lua_sethook(L_, budget_hook, LUA_MASKCOUNT, hook_granularity);
  lua_pushcfunction(L_, open_libs);
  if (lua_pcall(L_, 0, 0, 0) != LUA_OK) {
    const std::string msg = error_text(L_);
    lua_close(L_);
    throw std::runtime_error("grain: cannot set up the Lua state: " + msg +
                             " (memory limit too small?)");
  }
}

lua_sandbox::~lua_sandbox() {
  lua_close(L_);
}

void lua_sandbox::start_limits() {
  budget_used = 0;
  cut_now = cut_kind::none;
  deadline_ns = now_ns() + static_cast<std::uint64_t>(time_limit.count()) * 1'000'000ull;
  lua_sethook(L_, budget_hook, LUA_MASKCOUNT, hook_granularity);
}

void lua_sandbox::run_chunk(std::string_view code, const std::string& chunk, bool is_file) {
  lua_settop(L_, 0);
  const std::string name = is_file ? chunk : "=" + chunk;
  const load_request req{code, name.c_str(), is_file};
  lua_pushcfunction(L_, protected_load);
  lua_pushlightuserdata(L_, const_cast<load_request*>(&req));
  if (lua_pcall(L_, 1, 1, 0) != LUA_OK) {
    std::string msg = error_text(L_);
    lua_settop(L_, 0);
    throw policy_error(msg);
  }
  lua_rawgeti(L_, LUA_REGISTRYINDEX, msgh_ref);
  lua_insert(L_, 1);
  start_limits();
  const int rc = lua_pcall(L_, 0, 0, 1);
  if (rc != LUA_OK) {
    std::string msg = error_text(L_);
    lua_settop(L_, 0);
    throw policy_error(msg);
  }
  lua_settop(L_, 0);
}

std::optional<std::string> lua_sandbox::call(int ref, const push_args_fn& push_args) {
  lua_settop(L_, 0);
  lua_rawgeti(L_, LUA_REGISTRYINDEX, msgh_ref);
  lua_pushcfunction(L_, protected_call);
  const call_request req{ref, &push_args};
  lua_pushlightuserdata(L_, const_cast<call_request*>(&req));
  start_limits();
  const int rc = lua_pcall(L_, 1, 0, 1);
  std::optional<std::string> err;
  if (rc != LUA_OK) err = error_text(L_);
  lua_settop(L_, 0);
  return err;
}

std::string lua_sandbox::take_traceback() {
  return std::exchange(last_traceback, {});
}

void lua_sandbox::unref(int ref) {
  if (ref != LUA_NOREF) luaL_unref(L_, LUA_REGISTRYINDEX, ref);
}

}  // namespace grain::policy
