#pragma once
// A rule: what makes it run (its trigger) and what it runs (its action), plus the
// bookkeeping rules() reports. Trigger and action are variants of their own because they
// vary independently: a tuner runs on the same triggers as a Lua function or a C++ policy,
// and every kind of input reaches every kind of action through one dispatch.
#include <lua.hpp>

#include <cstdint>
#include <string>
#include <variant>

#include "comparison.hpp"
#include "grain/policy/engine.hpp"
#include "tuner.hpp"

namespace grain::policy {

// grain.every, add_periodic_policy, a tuner with a period: due at next_due (now_ns()).
struct periodic_trigger {
  std::uint64_t period_ns = 0;
  std::uint64_t next_due = 0;
};

// grain.on, add_policy, a tuner on an event: the event of that name ("sample": every
// counter snapshot).
struct event_trigger {
  std::string event;
};

// grain.when: every snapshot in which the counter compares true against the threshold.
struct counter_trigger {
  std::string counter;
  comparison op = comparison::greater;
  double threshold = 0;
};

using trigger = std::variant<periodic_trigger, event_trigger, counter_trigger>;

// A function in the Lua registry.
struct lua_function {
  int ref = LUA_NOREF;
};

using action = std::variant<lua_function, cpp_policy, tuner>;

// std::visit over a trigger or an action takes one lambda per alternative: a new kind of trigger
// or action does not compile until every dispatch (rule_dispatch.cpp) says what it does with it.
template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

struct rule {
  rule(trigger t, action a) : when(std::move(t)), what(std::move(a)) {}

  int id = 0;
  rule_info info;  // name, trigger text and the call and error counts rules() reports
  trigger when;
  action what;
  bool removed = false;

  bool active() const { return !info.disabled && !removed; }
  periodic_trigger* schedule() { return std::get_if<periodic_trigger>(&when); }
  const periodic_trigger* schedule() const { return std::get_if<periodic_trigger>(&when); }
  // The event this rule waits for; null for periodic and counter triggers.
  const std::string* event() const {
    const auto* on = std::get_if<event_trigger>(&when);
    return on ? &on->event : nullptr;
  }
};

}  // namespace grain::policy
