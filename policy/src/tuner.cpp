// Tuner rules: made in one place for C++ and Lua, and stepped on their triggers. Each point
// of the search is applied, `skip` triggers are ignored (they straddle the change), then
// `window` metric values are aggregated and told to the search.
#include "tuner.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "engine_impl.hpp"
#include "grain/clock.hpp"
#include "lua_api.hpp"
#include "rule.hpp"

namespace grain::policy {

namespace {

// A metric that is an event payload field needs an event trigger (not "sample", not a period).
bool metric_fits_trigger(const tune_request& req) {
  const bool counter = !req.metric.empty() && req.metric[0] == '/';
  return counter || (!req.trigger.empty() && req.trigger != "sample");
}

}  // namespace

std::unique_ptr<rule> make_tuner_rule(tune_request req, int lua_on_done) {
  trigger when;
  std::string text;
  if (req.trigger.empty()) {
    if (req.period.count() < 1) throw std::invalid_argument("a periodic trigger must be >= 1 ms");
    periodic_trigger e;
    e.period_ns = static_cast<std::uint64_t>(req.period.count()) * 1'000'000ull;
    e.next_due = now_ns() + e.period_ns;
    when = e;
    text = "every " + std::to_string(req.period.count()) + " ms";
  } else {
    when = event_trigger{req.trigger};
    text = "on " + req.trigger;
  }
  if (!metric_fits_trigger(req))
    throw std::invalid_argument("metric '" + req.metric +
                                "' is an event field, but the trigger brings no event: use a "
                                "counter name (/...) or an event trigger");
  std::string name = req.name;
  auto r = std::make_unique<rule>(std::move(when), tuner(std::move(req), lua_on_done));
  r->info.name = std::move(name);
  r->info.trigger = std::move(text);
  return r;
}

tuner::tuner(tune_request req, int lua_on_done)
    : search_(tuning::make_strategy(req.strategy, req.parameters, req.options)),
      lua_on_done_(lua_on_done) {
  for (auto& p : req.parameters) knobs_.push_back(&knobs().at(p.name));
  req_ = std::move(req);
}

void tuner::apply(engine::impl& e, rule& r, const tuning::point& p, const std::string& reason,
                  bool force) {
  acting_as as(e.decisions, r);
  e.decisions.reads.clear();
  if (search_->evaluations() > 0) e.decisions.reads.emplace_back(req_.metric, last_aggregate_);
  for (std::size_t i = 0; i < p.size(); ++i) {
    knob& k = *knobs_[i];
    if (!force && k.value() == k.clamp(p[i]).first) continue;
    e.decisions.set_knob(k, p[i], reason, false);
  }
}

// The metric's value for this trigger; empty, with the reason in `why`, when there is none.
std::optional<double> tuner::metric(engine::impl& e, const instrumentation::app_event* ev,
                                    std::string& why) const {
  const std::string& m = req_.metric;
  std::optional<double> v;
  if (!m.empty() && m[0] == '/') {
    const auto* c = e.counters.find(m);
    if (!c)
      why = "no counter named '" + m + "' in the snapshots";
    else if (!c->available)
      why = "the counter '" + m + "' is unavailable";
    else
      v = c->value;
  } else if (ev) {
    for (auto& [k, x] : ev->payload)
      if (k == m) v = x;
    if (!v) why = "the '" + ev->name + "' events carry no field '" + m + "'";
  } else {
    why = "the metric '" + m + "' is not a counter and the trigger is no event";
  }
  if (v && !std::isfinite(*v)) {
    why = "the metric '" + m + "' is not finite";
    v.reset();
  }
  return v;
}

void tuner::step(engine::impl& e, rule& r, const instrumentation::app_event* ev) {
  if (finished_) return;
  ++r.info.calls;
  if (!current_) {
    for (knob* k : knobs_) start_values_.push_back(k->value());
    next(e, r);
    return;
  }
  std::string why;
  const std::optional<double> value = metric(e, ev, why);
  // Without the metric the search would stay at whatever point it tried first: a whole
  // window (after the skipped triggers) without it ends the tuner.
  if (!value) {
    if (++missing_ >= req_.skip + req_.window) {
      fail(e, r, why);
      return;
    }
  } else {
    missing_ = 0;
  }
  if (skip_left_ > 0) {
    --skip_left_;
    return;
  }
  if (!value) return;
  window_.push_back(*value);
  if (window_.size() < req_.window) return;
  double agg = 0;
  if (req_.median) {
    std::sort(window_.begin(), window_.end());
    const std::size_t m = window_.size();
    agg = m % 2 ? window_[m / 2] : 0.5 * (window_[m / 2 - 1] + window_[m / 2]);
  } else {
    for (double x : window_) agg += x;
    agg /= static_cast<double>(window_.size());
  }
  last_aggregate_ = agg;
  search_->tell(req_.maximize ? -agg : agg);
  next(e, r);  // the next point at once (this trigger's call applies it)
}

// Asks the search for its next point and applies it, or finishes when it has none.
void tuner::next(engine::impl& e, rule& r) {
  window_.clear();
  current_ = search_->ask();
  if (!current_) {
    finish(e, r);
    return;
  }
  apply(e, r, *current_,
        "tune " + search_->name() + ": evaluating point " +
            std::to_string(search_->evaluations() + 1),
        false);
  skip_left_ = req_.skip;
}

void tuner::finish(engine::impl& e, rule& r) {
  finished_ = true;
  const auto& s = *search_;
  const double best_metric = req_.maximize ? -s.best_cost() : s.best_cost();
  std::vector<std::pair<std::string, double>> best;
  if (!s.best().empty()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "tune %s %s after %zu evaluations: best %s = %g",
                  s.name().c_str(), s.converged() ? "converged" : "spent its budget",
                  s.evaluations(), req_.metric.c_str(), best_metric);
    last_aggregate_ = best_metric;
    apply(e, r, s.best(), buf, true);  // always recorded: the search's result
    for (std::size_t i = 0; i < knobs_.size(); ++i)
      best.emplace_back(knobs_[i]->name(), s.best()[i]);
    spdlog::info("grain: {}", buf);
  } else {
    spdlog::warn("grain: tuner '{}' ended without an evaluation", r.info.name);
  }
  // The "tuned" event: Lua grain.on("tuned"), the request's callbacks.
  instrumentation::app_event ev;
  ev.time_ns = now_ns();
  ev.name = "tuned";
  ev.payload = best;
  ev.payload.emplace_back("metric", best_metric);
  ev.payload.emplace_back("evaluations", static_cast<double>(s.evaluations()));
  ev.payload.emplace_back("converged", s.converged() ? 1.0 : 0.0);
  ev.payload.emplace_back("id", static_cast<double>(r.id));
  if (lua_on_done_ != LUA_NOREF) {
    e.call_lua(r, lua_on_done_, [&](lua_State* L) {
      push_event_table(L, ev);
      lua_pushnumber(L, best_metric);
      lua_pushboolean(L, s.converged());
      return 3;
    });
  }
  if (req_.on_done) {
    try {
      req_.on_done(best, best_metric, s.converged());
    } catch (const std::exception& ex) {
      e.record_error(r, ex.what());
    }
  }
  e.dispatch_event(ev);
}

void tuner::fail(engine::impl& e, rule& r, const std::string& why) {
  finished_ = true;
  {
    acting_as as(e.decisions, r);
    e.decisions.reads.clear();
    for (std::size_t i = 0; i < knobs_.size() && i < start_values_.size(); ++i)
      if (knobs_[i]->value() != start_values_[i])
        e.decisions.set_knob(*knobs_[i], start_values_[i],
                             "tune: " + why + "; back to the starting value", false);
  }
  e.record_error(r, "grain.tune: " + why, "its metric never came");
}

}  // namespace grain::policy
