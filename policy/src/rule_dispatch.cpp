// Inputs to rules: the rule list, which rules a sample, an event or the clock triggers, and
// the hand-over of each to its action. Every dispatch is a std::visit with a case per kind of
// trigger or action (rule.hpp): a new kind does not compile until each case here is written.
#include <algorithm>

#include "engine_impl.hpp"
#include "grain/clock.hpp"
#include "lua_api.hpp"

namespace grain::policy {

int engine::impl::add_rule(std::unique_ptr<rule> r) {
  r->id = ++next_id;
  const int id = r->id;
  rules.push_back(std::move(r));
  return id;
}

int engine::impl::queue_rule(std::unique_ptr<rule> r) {
  // The id is taken now, so the caller can remove the rule before it is added.
  const int id = r->id = ++next_id;
  // std::function needs a copyable callable: the rule travels in a shared box.
  auto box = std::make_shared<std::unique_ptr<rule>>(std::move(r));
  run_or_queue([this, box] { rules.push_back(std::move(*box)); });
  return id;
}

void engine::impl::remove(int id) {
  for (auto& r : rules)
    if (r->id == id) r->removed = true;
}

void engine::impl::run_or_queue(std::function<void()> fn) {
  if (watch.abandoned.load()) return;  // the stuck thread keeps state_m: nothing can change now
  if (thread.running.load()) {
    std::lock_guard lk(inputs.m);
    queued q;
    q.kind = queued::command;
    q.fn = std::move(fn);
    inputs.push(std::move(q));
    return;
  }
  std::lock_guard lk(state_m);
  fn();
}

void engine::impl::fire(rule& r, const instrumentation::app_event* ev,
                        const push_args_fn& push_args) {
  if (!r.active()) return;
  std::visit(overloaded{[&](tuner& t) { t.step(*this, r, ev); },  // counts its own calls
                        [&](cpp_policy& fn) {
                          ++r.info.calls;
                          decisions.event = ev;
                          call_cpp(r, fn);
                        },
                        [&](lua_function& fn) {
                          ++r.info.calls;
                          decisions.event = ev;
                          if (fn.ref != LUA_NOREF && call_lua(r, fn.ref, push_args))
                            record_success(r);
                        }},
             r.what);
  decisions.event = nullptr;
}

void engine::impl::process_sample() {
  instrumentation::counter_snapshot& cur = counters.snapshot();
  {
    std::lock_guard lk(inputs.m);
    std::swap(inputs.slot, cur);  // `slot` keeps the old storage for the next copy
    inputs.sample_queued = false;
  }
  instrumentation::app_event ev;
  ev.time_ns = cur.time_ns;
  ev.name = "sample";
  ev.payload = {{"time", static_cast<double>(cur.time_ns) * 1e-9},
                {"sequence", static_cast<double>(cur.sequence)},
                {"final", cur.final ? 1.0 : 0.0}};
  const std::size_t n = rules.size();
  for (std::size_t i = 0; i < n; ++i) {
    rule& r = *rules[i];
    if (!r.active()) continue;
    decisions.reads.clear();
    std::visit(overloaded{[](const periodic_trigger&) {},  // the clock's: run_due_timers
                          [&](const event_trigger& on) {
                            if (on.event != "sample") return;
                            fire(r, &ev, [&](lua_State* L) {
                              push_event_table(L, ev);
                              lua_pushstring(L, "sample");
                              return 2;
                            });
                          },
                          [&](const counter_trigger& w) {
                            const auto* c = counters.find(w.counter);
                            if (!c || !c->available || !holds(w.op, c->value, w.threshold)) return;
                            const double v = c->value;
                            const std::string name = c->name;
                            decisions.note_read(name, v);
                            fire(r, nullptr, [&](lua_State* L) {
                              lua_pushnumber(L, v);
                              lua_pushstring(L, name.c_str());
                              return 2;
                            });
                          }},
               r.when);
  }
}

void engine::impl::dispatch_event(const instrumentation::app_event& e) {
  const std::size_t n = rules.size();
  for (std::size_t i = 0; i < n; ++i) {
    rule& r = *rules[i];
    if (!r.active()) continue;
    decisions.reads.clear();
    std::visit(overloaded{[](const periodic_trigger&) {}, [](const counter_trigger&) {},
                          [&](const event_trigger& on) {
                            if (on.event != e.name) return;
                            fire(r, &e, [&](lua_State* L) {
                              push_event_table(L, e);
                              lua_pushstring(L, e.name.c_str());
                              return 2;
                            });
                          }},
               r.when);
  }
}

std::uint64_t engine::impl::next_due() const {
  std::uint64_t due = ~0ull;
  for (auto& r : rules)
    if (const periodic_trigger* e = r->schedule(); e && r->active())
      due = std::min(due, e->next_due);
  return due;
}

void engine::impl::run_due_timers() {
  const std::uint64_t now = now_ns();
  const std::size_t n = rules.size();
  for (std::size_t i = 0; i < n; ++i) {
    rule& r = *rules[i];
    periodic_trigger* e = r.schedule();
    if (!e || !r.active() || e->next_due > now) continue;
    e->next_due += e->period_ns;
    if (e->next_due <= now) e->next_due = now + e->period_ns;  // fell behind: skip, no burst
    decisions.reads.clear();
    fire(r, nullptr, {});
  }
  // Drop removed rules, with the Lua functions they hold.
  for (auto& r : rules) {
    if (!r->removed) continue;
    std::visit(overloaded{[&](lua_function& f) { lua.unref(std::exchange(f.ref, LUA_NOREF)); },
                          [&](tuner& t) { lua.unref(t.lua_on_done()); }, [](cpp_policy&) {}},
               r->what);
  }
  rules.erase(std::remove_if(rules.begin(), rules.end(), [](auto& r) { return r->removed; }),
              rules.end());
}

}  // namespace grain::policy
