// grain.tune{...}: the Lua table parsed into a tune_request; the rule itself is made by
// make_tuner_rule (tuner.cpp), as for C++ tuners.
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "engine_impl.hpp"
#include "lua_api.hpp"
#include "rule.hpp"
#include "tuner.hpp"

namespace grain::policy {
namespace {

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
    return e->add_rule(make_tuner_rule(std::move(req), on_done));
  } catch (const std::exception& ex) {
    e->lua.unref(on_done);
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

}  // namespace

void add_tune_function(lua_State* L) {
  lua_pushcfunction(L, l_tune);
  lua_setfield(L, -2, "tune");
}

}  // namespace grain::policy
