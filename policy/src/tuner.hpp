#pragma once
// A tuner rule's state and its steps: a search strategy walks the knobs' space, each point
// held for a window of metric values (grain.tune, engine::add_tuner, register_tuner). Separate
// from the engine's dispatch because it is a small state machine of its own; the engine only
// hands it its triggers.
#include <lua.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grain/policy/engine.hpp"

namespace grain::policy {

struct rule;

class tuner {
 public:
  tuner(tune_request req, int lua_on_done);

  // One trigger of the rule `r` this tuner acts for; `ev` is the trigger's event, if any.
  void step(engine::impl& e, rule& r, const instrumentation::app_event* ev);
  // The Lua callback grain.tune{on_done=...}, LUA_NOREF when none.
  int lua_on_done() const { return lua_on_done_; }

 private:
  void next(engine::impl& e, rule& r);
  void finish(engine::impl& e, rule& r);
  // Ends a tuner that cannot work (`why`), its knobs back at their values from before it.
  void fail(engine::impl& e, rule& r, const std::string& why);
  void apply(engine::impl& e, rule& r, const tuning::point& p, const std::string& reason,
             bool force);
  std::optional<double> metric(engine::impl& e, const instrumentation::app_event* ev,
                               std::string& why) const;

  tune_request req_;
  std::unique_ptr<tuning::strategy> search_;
  std::vector<knob*> knobs_;
  std::optional<tuning::point> current_;
  std::size_t skip_left_ = 0;
  std::vector<double> window_;
  double last_aggregate_ = 0;
  bool finished_ = false;
  std::vector<double> start_values_;  // the knobs before the tuner's first change
  std::size_t missing_ = 0;           // triggers in a row without the metric
  int lua_on_done_ = LUA_NOREF;
};

// The one place a tuner rule is made, for C++ (engine::add_tuner) and Lua (grain.tune).
// Throws std::invalid_argument for a request that cannot work (period below 1 ms, an event
// field as metric without an event trigger, unknown strategy) and std::out_of_range for an
// unknown knob. The rule's id is set when it joins the engine.
std::unique_ptr<rule> make_tuner_rule(tune_request req, int lua_on_done = LUA_NOREF);

}  // namespace grain::policy
