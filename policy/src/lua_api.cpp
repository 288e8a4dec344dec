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
  if (!e->budget_exhausted) {
    e->budget_used += static_cast<std::uint64_t>(lua_gethookcount(L));
    if (e->budget_used <= e->opts.instruction_budget) {
      if (lua_gethookcount(L) != e->hook_granularity)
        lua_sethook(L, budget_hook, LUA_MASKCOUNT, e->hook_granularity);
      return;
    }
    e->budget_exhausted = true;
  }
  // From now on every instruction raises, so that pcall inside the rule cannot swallow it.
  lua_sethook(L, budget_hook, LUA_MASKCOUNT, 1);
  luaL_where(L, 0);
  lua_pushfstring(L, "instruction budget of %I exceeded (endless loop?)",
                  static_cast<lua_Integer>(e->opts.instruction_budget));
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

// Pushes the compiled chunk of a file inside the module directories, or raises.
void load_allowed_file(lua_State* L, const char* path) {
  engine::impl* e = engine_of(L);
  std::string real = real_path(path);
  if (real.empty() || !inside_module_dirs(e, real))
    luaL_error(L, "'%s' is outside the policy module directories (%s)", path, dirs_text(e).c_str());
  if (luaL_loadfilex(L, real.c_str(), "t") != LUA_OK) lua_error(L);
}

int l_loadfile(lua_State* L) {
  load_allowed_file(L, luaL_checkstring(L, 1));
  return 1;
}

int l_dofile(lua_State* L) {
  load_allowed_file(L, luaL_checkstring(L, 1));
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

// require(name): modules from the module directories only, cached.
int l_require(lua_State* L) {
  engine::impl* e = engine_of(L);
  std::string name = luaL_checkstring(L, 1);
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      luaL_error(L, "require: invalid module name '%s'", name.c_str());
  lua_getfield(L, LUA_REGISTRYINDEX, "grain.loaded");
  lua_getfield(L, -1, name.c_str());
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);
  std::string rel = name;
  std::replace(rel.begin(), rel.end(), '.', '/');
  for (auto& d : e->module_dirs) {
    std::string path = d + "/" + rel + ".lua";
    if (::access(path.c_str(), R_OK) != 0) continue;
    if (luaL_loadfilex(L, path.c_str(), "t") != LUA_OK) lua_error(L);
    lua_pushstring(L, name.c_str());
    lua_call(L, 1, 1);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, name.c_str());
    return 1;
  }
  return luaL_error(L, "module '%s' not found in the policy module directories (%s)", name.c_str(),
                    dirs_text(e).c_str());
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
  if (!k)
    return luaL_error(L, "no knob named '%s' (known knobs: %s)", name, knobs().names().c_str());
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

double opt_number(lua_State* L, int t, const char* key, double def) {
  lua_getfield(L, t, key);
  double v = lua_isnil(L, -1) ? def : luaL_checknumber(L, -1);
  lua_pop(L, 1);
  return v;
}

std::string opt_string(lua_State* L, int t, const char* key, const char* def) {
  lua_getfield(L, t, key);
  std::string v = lua_isnil(L, -1) ? std::string(def) : std::string(luaL_checkstring(L, -1));
  lua_pop(L, 1);
  return v;
}

tuning::parameter knob_parameter(lua_State* L, const char* name) {
  knob* k = knobs().find(name);
  if (!k)
    luaL_error(L, "grain.tune: no knob named '%s' (known knobs: %s)", name,
               knobs().names().c_str());
  return tuning::parameter::from_knob(*k);
}

int l_tune(lua_State* L) {
  engine::impl* e = engine_of(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  tune_request req;
  lua_getfield(L, 1, "knobs");
  if (!lua_istable(L, -1)) return luaL_error(L, "grain.tune: 'knobs' must be a list of knobs");
  const lua_Integer n = luaL_len(L, -1);
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, -1, i);
    if (lua_type(L, -1) == LUA_TSTRING) {
      req.parameters.push_back(knob_parameter(L, lua_tostring(L, -1)));
    } else if (lua_istable(L, -1)) {
      const int t = lua_gettop(L);
      std::string name = opt_string(L, t, "name", "");
      tuning::parameter p = knob_parameter(L, name.c_str());
      // A narrower range than the knob's; values outside the knob's range are clamped.
      p.min = std::max(p.min, opt_number(L, t, "min", p.min));
      p.max = std::min(p.max, opt_number(L, t, "max", p.max));
      p.step = opt_number(L, t, "step", p.step);
      if (p.type == knob_type::integer && p.step < 1) p.step = 1;
      if (p.min > p.max) luaL_error(L, "grain.tune: knob %s: min > max", name.c_str());
      p.initial = std::clamp(opt_number(L, t, "start", p.initial), p.min, p.max);
      req.parameters.push_back(std::move(p));
    } else {
      return luaL_error(L, "grain.tune: knobs[%d] must be a knob name or {name=..., min=...}",
                        static_cast<int>(i));
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (req.parameters.empty()) return luaL_error(L, "grain.tune: no knob to tune");
  req.metric = opt_string(L, 1, "metric", "");
  if (req.metric.empty())
    return luaL_error(L, "grain.tune: 'metric' (a counter or an event payload field) is required");
  const std::string goal = opt_string(L, 1, "goal", "min");
  if (goal != "min" && goal != "max")
    return luaL_error(L, "grain.tune: goal must be \"min\" or \"max\"");
  req.maximize = goal == "max";
  req.strategy = opt_string(L, 1, "strategy", "nelder_mead");
  lua_getfield(L, 1, "trigger");
  if (lua_type(L, -1) == LUA_TNUMBER) {
    const double ms = lua_tonumber(L, -1);
    if (!(ms >= 1)) return luaL_error(L, "grain.tune: a periodic trigger must be >= 1 ms");
    req.trigger.clear();
    req.period = std::chrono::milliseconds(static_cast<long long>(ms));
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    req.trigger = lua_tostring(L, -1);
  } else if (!lua_isnil(L, -1)) {
    return luaL_error(L, "grain.tune: trigger must be \"sample\", an event name or ms");
  }
  lua_pop(L, 1);
  req.window = static_cast<std::size_t>(std::max(1.0, opt_number(L, 1, "window", 3)));
  req.skip = static_cast<std::size_t>(std::max(0.0, opt_number(L, 1, "skip", 1)));
  req.options.budget = static_cast<std::size_t>(std::max(0.0, opt_number(L, 1, "budget", 0)));
  req.options.seed = static_cast<std::uint64_t>(opt_number(L, 1, "seed", 42));
  req.options.double_levels =
      static_cast<std::size_t>(std::max(2.0, opt_number(L, 1, "levels", 11)));
  const std::string agg = opt_string(L, 1, "aggregate", "median");
  if (agg != "median" && agg != "mean")
    return luaL_error(L, "grain.tune: aggregate must be \"median\" or \"mean\"");
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
  int on_done = LUA_NOREF;
  lua_getfield(L, 1, "on_done");
  if (lua_isfunction(L, -1))
    on_done = luaL_ref(L, LUA_REGISTRYINDEX);
  else
    lua_pop(L, 1);
  int id = 0;
  try {
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
    id = e->add_rule(std::move(r));
  } catch (const std::exception& ex) {
    e->unref(on_done);
    return luaL_error(L, "grain.tune: %s", ex.what());
  }
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

void engine::impl::open_state() {
  mem_limit = opts.memory_limit;
  L = lua_newstate(limited_alloc, this);
  if (!L) throw std::runtime_error("grain: cannot create the Lua state (memory limit too small?)");
  *static_cast<engine::impl**>(lua_getextraspace(L)) = this;
  hook_granularity =
      static_cast<int>(std::clamp<std::uint64_t>(opts.instruction_budget / 4, 1, 1000));
  lua_sethook(L, budget_hook, LUA_MASKCOUNT, hook_granularity);

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

  lua_pushcfunction(L, message_handler);
  msgh_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

void engine::impl::load(std::string_view code, const std::string& chunk, bool is_file) {
  std::lock_guard lk(state_m);
  lua_settop(L, 0);
  int rc;
  if (is_file)
    rc = luaL_loadfilex(L, chunk.c_str(), "t");
  else
    rc = luaL_loadbufferx(L, code.data(), code.size(), ("=" + chunk).c_str(), "t");
  if (rc != LUA_OK) {
    std::string msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "unknown error";
    lua_settop(L, 0);
    throw policy_error(msg);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, msgh_ref);
  lua_insert(L, 1);
  budget_used = 0;
  budget_exhausted = false;
  lua_sethook(L, budget_hook, LUA_MASKCOUNT, hook_granularity);
  load_rule_name = basename_of(chunk);
  reads.clear();
  rc = lua_pcall(L, 0, 0, 1);
  load_rule_name.clear();
  if (rc != LUA_OK) {
    std::string msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "unknown error";
    lua_settop(L, 0);
    throw policy_error(msg);
  }
  lua_settop(L, 0);
}

bool engine::impl::call_lua(rule& r, int ref, const std::function<int(lua_State*)>& push_args) {
  lua_settop(L, 0);
  lua_rawgeti(L, LUA_REGISTRYINDEX, msgh_ref);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  const int nargs = push_args ? push_args(L) : 0;
  budget_used = 0;
  budget_exhausted = false;
  lua_sethook(L, budget_hook, LUA_MASKCOUNT, hook_granularity);
  rule* saved = cur_rule;
  cur_rule = &r;
  const int rc = lua_pcall(L, nargs, 0, 1);
  cur_rule = saved;
  if (rc != LUA_OK) {
    std::string msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "unknown error";
    lua_settop(L, 0);
    record_error(r, msg);
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
