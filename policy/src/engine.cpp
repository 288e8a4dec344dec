// The policy engine: input queue, policy thread, rule dispatch, error accounting, tuners.
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine_impl.hpp"
#include "grain/clock.hpp"
#include "grain/instrumentation/counters.hpp"

namespace grain::policy {

namespace {

std::string real_dir(const std::string& d) {
  char* r = ::realpath(d.c_str(), nullptr);
  if (!r) return {};
  std::string s(r);
  std::free(r);
  return s;
}

std::uint64_t cpu_ns(clockid_t id) {
  timespec ts{};
  if (clock_gettime(id, &ts) != 0) return 0;
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

bool compare(int op, double a, double b) {
  switch (op) {
    case 0:
      return a < b;
    case 1:
      return a <= b;
    case 2:
      return a > b;
    case 3:
      return a >= b;
    case 4:
      return a == b;
    default:
      return a != b;
  }
}

// Events the engine generates itself; the same names arriving from the application are
// ignored (they would run the lifecycle rules twice).
bool reserved_event(std::string_view n) {
  return n == "start" || n == "stop" || n == "sample" || n == "tuned";
}

}  // namespace

bool tune_metric_fits_trigger(const tune_request& req) {
  const bool counter = !req.metric.empty() && req.metric[0] == '/';
  return counter || (!req.trigger.empty() && req.trigger != "sample");
}

// ---- impl --------------------------------------------------------------------------------

engine::impl::impl(engine_options o) : opts(std::move(o)) {
  std::vector<std::string> dirs = opts.module_dirs;
  if (dirs.empty()) {
#ifdef GRAIN_POLICY_SOURCE_DIR
    dirs.push_back(GRAIN_POLICY_SOURCE_DIR);
#endif
#ifdef GRAIN_POLICY_INSTALL_DIR
    dirs.push_back(GRAIN_POLICY_INSTALL_DIR);
#endif
  }
  for (auto& d : dirs) {
    std::string r = real_dir(d);
    if (!r.empty() && std::find(module_dirs.begin(), module_dirs.end(), r) == module_dirs.end())
      module_dirs.push_back(r);
  }
  open_state();
}

engine::impl::~impl() {
  if (L) lua_close(L);
}

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
  if (abandoned.load()) return;  // the stuck thread keeps state_m: nothing can change now
  if (running.load()) {
    std::lock_guard lk(qm);
    queued q;
    q.kind = queued::command;
    q.fn = std::move(fn);
    queue.push_back(std::move(q));
    qcv.notify_one();
    return;
  }
  std::lock_guard lk(state_m);
  fn();
}

const instrumentation::counter_value* engine::impl::find_counter(std::string_view name) {
  if (index_generation != cur.layout_generation || index_size != cur.values.size() ||
      cur.layout_generation == 0) {
    // Rebuild the name index (the snapshot's layout changed).
    if (index_generation != cur.layout_generation || index_size != cur.values.size()) {
      index.clear();
      for (std::size_t i = 0; i < cur.values.size(); ++i) {
        const std::string& n = cur.values[i].name;
        index.emplace(n, i);
        // The short form /object/counter for /object{locality#0/total}/counter.
        static const std::string total = "{locality#0/total}";
        auto p = n.find(total);
        if (p != std::string::npos) index.emplace(n.substr(0, p) + n.substr(p + total.size()), i);
      }
      index_generation = cur.layout_generation;
      index_size = cur.values.size();
    }
  }
  auto it = index.find(std::string(name));
  if (it == index.end() || it->second >= cur.values.size()) return nullptr;
  return &cur.values[it->second];
}

void engine::impl::note_read(const std::string& name, double v) {
  for (auto& [n, x] : reads)
    if (n == name) {
      x = v;
      return;
    }
  if (reads.size() < 32) reads.emplace_back(name, v);
}

decision_record engine::impl::set_knob(knob& k, double requested, std::string_view reason,
                                       bool only_if_changed) {
  auto [v, clamped] = k.clamp(requested);
  if (only_if_changed && !clamped && v == k.value()) {
    decision_record r;
    r.knob = k.name();
    r.type = k.type();
    r.old_value = r.new_value = r.requested = v;
    return r;  // nothing changes: no record
  }
  const std::string rule_name =
      cur_rule ? cur_rule->name : (load_rule_name.empty() ? "policy" : load_rule_name);
  return k.set(requested, reason, rule_name, reads);
}

void engine::impl::record_error(rule& r, const std::string& msg, const char* disable_why) {
  ++r.errors;
  ++r.consecutive_errors;
  r.last_error = msg;
  spdlog::error("grain: policy rule '{}' ({}) failed: {}", r.name, r.trigger, msg);
  if (!last_traceback.empty()) spdlog::debug("grain: {}", last_traceback);
  last_traceback.clear();
  if (r.disabled) return;
  if (disable_why) {
    r.disabled = true;
    spdlog::error("grain: policy rule '{}' disabled: {}", r.name, disable_why);
  } else if (r.consecutive_errors >= opts.max_consecutive_errors) {
    r.disabled = true;
    spdlog::error("grain: policy rule '{}' disabled after {} consecutive errors", r.name,
                  r.consecutive_errors);
  }
}

// ---- the time limit seen from other threads --------------------------------------------------

bool engine::impl::begin_call(rule& r) {
  std::lock_guard lk(call_m);
  if (call_rule) return false;
  call_rule = &r;
  call_started_ns = now_ns();
  return true;
}

void engine::impl::end_call() {
  std::lock_guard lk(call_m);
  call_rule = nullptr;
}

std::uint64_t engine::impl::stuck_after_ns() const {
  // The hook cuts Lua code at the deadline; a call still running a whole limit later (at
  // least 200 ms, for a loaded machine) is in a place the hook does not reach.
  const auto limit = static_cast<std::uint64_t>(opts.time_limit.count()) * 1'000'000ull;
  return limit + std::max<std::uint64_t>(limit, 200'000'000ull);
}

std::string engine::impl::stuck_rule(rule_info* info) {
  std::lock_guard lk(call_m);
  if (!call_rule || now_ns() - call_started_ns < stuck_after_ns()) return {};
  if (info) {
    info->name = call_rule->name;
    info->trigger = call_rule->trigger;
    info->calls = call_rule->calls;
    info->errors = call_rule->errors + 1;
    info->consecutive_errors = call_rule->consecutive_errors + 1;
    info->disabled = true;
  }
  return call_rule->name;
}

bool engine::impl::wait_thread_end() {
  // Every call is cut or found stuck within stuck_after_ns; the overall bound covers a long
  // queue of calls that each stay under the limit.
  const std::uint64_t bound = now_ns() + 2 * stuck_after_ns() + 1'000'000'000ull;
  std::unique_lock lk(qm);
  while (!thread_done) {
    rule_info info;
    std::string name = stuck_rule(&info);
    if (name.empty() && now_ns() < bound) {
      sync_cv.wait_for(lk, std::chrono::milliseconds(20));
      continue;
    }
    if (!name.empty()) {
      const std::string why =
          "it has run for more than " + std::to_string(stuck_after_ns() / 1'000'000) +
          " ms, past its time limit of " + std::to_string(opts.time_limit.count()) +
          " ms, inside code that cannot be interrupted (a C function such "
          "as string.find)";
      info.last_error = "abandoned: " + why;
      abandoned_rules.push_back(std::move(info));
      spdlog::error(
          "grain: policy rule '{}' ({}) disabled: {}; the policy thread is abandoned and the "
          "program goes on without it",
          name, abandoned_rules.back().trigger, why);
    } else {
      spdlog::error(
          "grain: the policy thread did not finish its queued work in time; it is abandoned "
          "and the program goes on without it");
    }
    abandoned.store(true);
    return false;
  }
  return true;
}

void engine::impl::record_success(rule& r) {
  r.consecutive_errors = 0;
}

// One call of a rule (Lua or C++), with its reads and errors accounted.
void engine::impl::invoke(rule& r, const instrumentation::app_event* ev,
                          const std::function<int(lua_State*)>& push_args) {
  if (r.disabled || r.removed) return;
  ++r.calls;
  cur_event = ev;
  if (r.cpp) {
    struct ctx final : policy_context {
      engine::impl* e;
      const std::string* rule_name;
      std::optional<double> counter(std::string_view name) override {
        auto* c = e->find_counter(name);
        if (!c || !c->available) return std::nullopt;
        e->note_read(c->name, c->value);
        return c->value;
      }
      std::vector<std::pair<std::string, double>> counters(std::string_view pattern) override {
        instrumentation::counter_pattern p(pattern);
        std::vector<std::pair<std::string, double>> out;
        for (auto& c : e->cur.values)
          if (c.available && p.matches(std::string_view(c.name))) {
            e->note_read(c.name, c.value);
            out.emplace_back(c.name, c.value);
          }
        return out;
      }
      const instrumentation::app_event* event() const override { return e->cur_event; }
      decision_record set(std::string_view knob, double value, std::string_view reason) override {
        return e->set_knob(knobs().at(knob), value, reason, true);
      }
      double get(std::string_view knob) override { return knobs().at(knob).value(); }
      const std::string& rule() const override { return *rule_name; }
    } c;
    c.e = this;
    c.rule_name = &r.name;
    rule* saved = cur_rule;
    cur_rule = &r;
    const bool outer = begin_call(r);
    try {
      r.cpp(c);
      if (outer) end_call();
      record_success(r);
    } catch (const std::exception& ex) {
      if (outer) end_call();
      record_error(r, ex.what());
    } catch (...) {
      if (outer) end_call();
      record_error(r, "unknown exception");
    }
    cur_rule = saved;
  } else if (r.lua_ref != LUA_NOREF) {
    if (call_lua(r, r.lua_ref, push_args)) record_success(r);
  }
  cur_event = nullptr;
}

void engine::impl::process_sample() {
  {
    std::lock_guard lk(qm);
    std::swap(slot, cur);  // `slot` keeps the old storage for the next copy
    sample_queued = false;
  }
  const double t = static_cast<double>(cur.time_ns) * 1e-9;
  const double seq = static_cast<double>(cur.sequence);
  const bool fin = cur.final;
  instrumentation::app_event ev;
  ev.time_ns = cur.time_ns;
  ev.name = "sample";
  ev.payload = {{"time", t}, {"sequence", seq}, {"final", fin ? 1.0 : 0.0}};
  const std::size_t n = rules.size();
  for (std::size_t i = 0; i < n; ++i) {
    rule& r = *rules[i];
    if (r.disabled || r.removed) continue;
    reads.clear();
    if (r.kind == rule_kind::on && r.event == "sample") {
      invoke(r, &ev, [&](lua_State* L) {
        push_event_table(ev);
        lua_pushstring(L, "sample");
        return 2;
      });
    } else if (r.kind == rule_kind::when) {
      const auto* c = find_counter(r.counter);
      if (!c || !c->available || !compare(r.op, c->value, r.threshold)) continue;
      const double v = c->value;
      const std::string name = c->name;
      note_read(name, v);
      invoke(r, nullptr, [&](lua_State* L) {
        lua_pushnumber(L, v);
        lua_pushstring(L, name.c_str());
        return 2;
      });
    } else if (r.kind == rule_kind::tuner && r.tuner->req.trigger == "sample") {
      tuner_trigger(r, nullptr);
    }
  }
}

void engine::impl::dispatch_event(const instrumentation::app_event& e) {
  const std::size_t n = rules.size();
  for (std::size_t i = 0; i < n; ++i) {
    rule& r = *rules[i];
    if (r.disabled || r.removed) continue;
    reads.clear();
    if (r.kind == rule_kind::on && r.event == e.name) {
      invoke(r, &e, [&](lua_State* L) {
        push_event_table(e);
        lua_pushstring(L, e.name.c_str());
        return 2;
      });
    } else if (r.kind == rule_kind::tuner && r.tuner->req.trigger == e.name) {
      tuner_trigger(r, &e);
    }
  }
}

std::uint64_t engine::impl::next_due() const {
  std::uint64_t due = ~0ull;
  for (auto& r : rules)
    if (r->period_ns && !r->disabled && !r->removed) due = std::min(due, r->next_due);
  return due;
}

void engine::impl::run_due_timers() {
  const std::uint64_t now = now_ns();
  const std::size_t n = rules.size();
  for (std::size_t i = 0; i < n; ++i) {
    rule& r = *rules[i];
    if (!r.period_ns || r.disabled || r.removed || r.next_due > now) continue;
    r.next_due += r.period_ns;
    if (r.next_due <= now) r.next_due = now + r.period_ns;  // fell behind: skip, no burst
    reads.clear();
    if (r.kind == rule_kind::tuner)
      tuner_trigger(r, nullptr);
    else
      invoke(r, nullptr, {});
  }
  // Drop removed rules.
  for (auto& r : rules)
    if (r->removed && r->lua_ref != LUA_NOREF) {
      unref(r->lua_ref);
      r->lua_ref = LUA_NOREF;
    }
  rules.erase(std::remove_if(rules.begin(), rules.end(), [](auto& r) { return r->removed; }),
              rules.end());
}

void engine::impl::wait_ticket(std::unique_lock<std::mutex>& lk, std::uint64_t ticket) {
  const std::uint64_t bound = now_ns() + 2 * stuck_after_ns() + 1'000'000'000ull;
  while (sync_done < ticket && running.load() && !thread_done) {
    const std::string name = stuck_rule();
    if (!name.empty()) {
      if (stuck_reported != name) {
        stuck_reported = name;
        spdlog::error(
            "grain: policy rule '{}' has run past its time limit of {} ms inside code that "
            "cannot be interrupted (a C function such as string.find); settle_listeners and "
            "pump do not wait for it",
            name, opts.time_limit.count());
      }
      return;
    }
    if (now_ns() >= bound) {
      spdlog::warn("grain: the policy thread did not handle its inputs in time; not waiting");
      return;
    }
    sync_cv.wait_for(lk, std::chrono::milliseconds(20));
  }
}

// ---- tuners --------------------------------------------------------------------------------

void engine::impl::tuner_apply(rule& r, const tuning::point& p, const std::string& reason,
                               bool force) {
  tuner_state& t = *r.tuner;
  rule* saved = cur_rule;
  cur_rule = &r;
  reads.clear();
  if (t.search->evaluations() > 0) reads.emplace_back(t.req.metric, t.last_aggregate);
  for (std::size_t i = 0; i < p.size(); ++i) {
    knob& k = *t.knobs[i];
    if (!force && k.value() == k.clamp(p[i]).first) continue;
    set_knob(k, p[i], reason, false);
  }
  cur_rule = saved;
}

// The metric's value for this trigger; empty, with the reason in `why`, when there is none.
std::optional<double> engine::impl::tuner_metric(const tuner_state& t,
                                                 const instrumentation::app_event* ev,
                                                 std::string& why) {
  const std::string& m = t.req.metric;
  std::optional<double> v;
  if (!m.empty() && m[0] == '/') {
    const auto* c = find_counter(m);
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

void engine::impl::tuner_trigger(rule& r, const instrumentation::app_event* ev) {
  tuner_state& t = *r.tuner;
  if (t.finished) return;
  ++r.calls;
  if (!t.current) {
    for (knob* k : t.knobs) t.start_values.push_back(k->value());
    tuner_next(r);
    return;
  }
  std::string why;
  const std::optional<double> value = tuner_metric(t, ev, why);
  // Without the metric the search would stay at whatever point it tried first: a whole
  // window (after the skipped triggers) without it ends the tuner.
  if (!value) {
    if (++t.missing >= t.req.skip + t.req.window) {
      tuner_fail(r, why);
      return;
    }
  } else {
    t.missing = 0;
  }
  if (t.skip_left > 0) {
    --t.skip_left;
    return;
  }
  if (!value) return;
  const double v = *value;
  t.window.push_back(v);
  if (t.window.size() < t.req.window) return;
  double agg = 0;
  if (t.req.median) {
    std::sort(t.window.begin(), t.window.end());
    const std::size_t m = t.window.size();
    agg = m % 2 ? t.window[m / 2] : 0.5 * (t.window[m / 2 - 1] + t.window[m / 2]);
  } else {
    for (double x : t.window) agg += x;
    agg /= static_cast<double>(t.window.size());
  }
  t.last_aggregate = agg;
  t.search->tell(t.req.maximize ? -agg : agg);
  tuner_next(r);  // the next point at once (this trigger's call applies it)
}

// Asks the search for its next point and applies it, or finishes when it has none.
void engine::impl::tuner_next(rule& r) {
  tuner_state& t = *r.tuner;
  t.window.clear();
  t.current = t.search->ask();
  if (!t.current) {
    tuner_finish(r);
    return;
  }
  tuner_apply(r, *t.current,
              "tune " + t.search->name() + ": evaluating point " +
                  std::to_string(t.search->evaluations() + 1),
              false);
  t.skip_left = t.req.skip;
}

void engine::impl::tuner_finish(rule& r) {
  tuner_state& t = *r.tuner;
  t.finished = true;
  const auto& s = *t.search;
  const double best_metric = t.req.maximize ? -s.best_cost() : s.best_cost();
  std::vector<std::pair<std::string, double>> best;
  if (!s.best().empty()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "tune %s %s after %zu evaluations: best %s = %g",
                  s.name().c_str(), s.converged() ? "converged" : "spent its budget",
                  s.evaluations(), t.req.metric.c_str(), best_metric);
    t.last_aggregate = best_metric;
    tuner_apply(r, s.best(), buf, true);  // always recorded: the search's result
    for (std::size_t i = 0; i < t.knobs.size(); ++i)
      best.emplace_back(t.knobs[i]->name(), s.best()[i]);
    spdlog::info("grain: {}", buf);
  } else {
    spdlog::warn("grain: tuner '{}' ended without an evaluation", r.name);
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
  if (t.lua_on_done != LUA_NOREF) {
    call_lua(r, t.lua_on_done, [&](lua_State* L) {
      push_event_table(ev);
      lua_pushnumber(L, best_metric);
      lua_pushboolean(L, s.converged());
      return 3;
    });
  }
  if (t.req.on_done) {
    try {
      t.req.on_done(best, best_metric, s.converged());
    } catch (const std::exception& ex) {
      record_error(r, ex.what());
    }
  }
  dispatch_event(ev);
}

void engine::impl::tuner_fail(rule& r, const std::string& why) {
  tuner_state& t = *r.tuner;
  t.finished = true;
  rule* saved = cur_rule;
  cur_rule = &r;
  reads.clear();
  for (std::size_t i = 0; i < t.knobs.size() && i < t.start_values.size(); ++i)
    if (t.knobs[i]->value() != t.start_values[i])
      set_knob(*t.knobs[i], t.start_values[i], "tune: " + why + "; back to the starting value",
               false);
  cur_rule = saved;
  record_error(r, "grain.tune: " + why, "its metric never came");
}

// ---- queue and thread ----------------------------------------------------------------------

void engine::impl::process(queued& q) {
  std::lock_guard lk(state_m);
  if (abandoned.load()) return;  // the thread came back after stop() left it behind
  switch (q.kind) {
    case queued::sample:
      process_sample();
      break;
    case queued::event:
      dispatch_event(q.ev);
      break;
    case queued::command:
      q.fn();
      break;
    case queued::sync:
      break;
  }
  if (q.kind == queued::sync) {
    std::lock_guard lk2(qm);
    sync_done = std::max(sync_done, q.sync_ticket);
    sync_cv.notify_all();
  }
}

void engine::impl::drain() {
  for (;;) {
    queued q;
    {
      std::lock_guard lk(qm);
      if (queue.empty()) return;
      q = std::move(queue.front());
      queue.pop_front();
    }
    process(q);
  }
}

void engine::impl::thread_main() {
  pthread_setname_np(pthread_self(), "grain-policy");
  clockid_t id;
  if (pthread_getcpuclockid(pthread_self(), &id) == 0) {
    cpu_clock = id;
    have_clock.store(true, std::memory_order_release);
  }
  std::uint64_t due = 0;
  for (;;) {
    {
      std::lock_guard lk(state_m);
      run_due_timers();
      due = next_due();
    }
    std::unique_lock lk(qm);
    if (abandoned.load()) break;
    if (queue.empty()) {
      if (stopping) break;
      if (due == ~0ull) {
        qcv.wait(lk, [&] { return !queue.empty() || stopping; });
      } else {
        const std::uint64_t now = now_ns();
        if (due > now)
          qcv.wait_for(lk, std::chrono::nanoseconds(due - now),
                       [&] { return !queue.empty() || stopping; });
      }
    }
    // Up to a batch of inputs, then the timers again.
    for (int i = 0; i < 64 && !queue.empty(); ++i) {
      queued q = std::move(queue.front());
      queue.pop_front();
      lk.unlock();
      process(q);
      lk.lock();
    }
  }
  final_cpu = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  have_clock.store(false, std::memory_order_release);
  std::lock_guard lk(qm);
  thread_done = true;
  sync_cv.notify_all();
}

// ---- engine ----------------------------------------------------------------------------------

engine::engine(engine_options opts) : impl_(std::make_unique<impl>(std::move(opts))) {}

engine::~engine() {
  try {
    stop();
  } catch (...) {
  }
  // The abandoned thread may still run in the impl and its Lua state: they stay.
  if (impl_->abandoned.load()) (void)impl_.release();
}

void engine::load_file(const std::string& path) {
  if (impl_->opts.add_policy_dirs) {
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    std::string r = real_dir(dir);
    if (!r.empty() && std::find(impl_->module_dirs.begin(), impl_->module_dirs.end(), r) ==
                          impl_->module_dirs.end())
      impl_->module_dirs.push_back(r);
  }
  impl_->load({}, path, true);
}

void engine::load_string(std::string_view code, std::string_view chunk_name) {
  impl_->load(code, std::string(chunk_name), false);
}

namespace {
std::string ms_text(std::chrono::milliseconds p) {
  return "every " + std::to_string(p.count()) + " ms";
}
}  // namespace

int engine::add_policy(std::string event, cpp_policy fn, std::string name) {
  auto r = std::make_unique<rule>();
  r->kind = rule_kind::on;
  r->event = event;
  r->name = name.empty() ? "cpp:" + event : name;
  r->trigger = "on " + event;
  r->cpp = std::move(fn);
  return impl_->queue_rule(std::move(r));
}

int engine::add_periodic_policy(std::chrono::milliseconds period, cpp_policy fn, std::string name) {
  if (period.count() < 1) throw std::invalid_argument("policy period must be >= 1 ms");
  auto r = std::make_unique<rule>();
  r->kind = rule_kind::every;
  r->period_ns = static_cast<std::uint64_t>(period.count()) * 1'000'000ull;
  r->next_due = now_ns() + r->period_ns;
  r->name = name.empty() ? "cpp:" + ms_text(period) : name;
  r->trigger = ms_text(period);
  r->cpp = std::move(fn);
  return impl_->queue_rule(std::move(r));
}

int engine::add_tuner(tune_request req) {
  auto r = std::make_unique<rule>();
  r->kind = rule_kind::tuner;
  r->name = req.name.empty() ? "tune" : req.name;
  r->trigger = req.trigger.empty() ? ms_text(req.period) : "on " + req.trigger;
  if (req.trigger.empty()) {
    if (req.period.count() < 1) throw std::invalid_argument("tune: period must be >= 1 ms");
    r->period_ns = static_cast<std::uint64_t>(req.period.count()) * 1'000'000ull;
    r->next_due = now_ns() + r->period_ns;
  }
  if (!tune_metric_fits_trigger(req))
    throw std::invalid_argument("tune: metric '" + req.metric +
                                "' is an event field, but the trigger brings no event");
  r->tuner = std::make_unique<tuner_state>();
  r->tuner->search = tuning::make_strategy(req.strategy, req.parameters, req.options);
  for (auto& p : req.parameters) r->tuner->knobs.push_back(&knobs().at(p.name));
  r->tuner->req = std::move(req);
  return impl_->queue_rule(std::move(r));
}

void engine::remove_rule(int id) {
  impl_->run_or_queue([this, id] { impl_->remove(id); });
}

void engine::start(double workers) {
  if (impl_->running.load() || impl_->started_once) return;
  impl_->started_once = true;
  impl_->stopping = false;
  instrumentation::app_event ev;
  ev.time_ns = now_ns();
  ev.name = "start";
  ev.payload = {{"workers", workers}};
  {
    std::lock_guard lk(impl_->qm);
    queued q;
    q.kind = queued::event;
    q.ev = std::move(ev);
    impl_->queue.push_front(std::move(q));
  }
  // Periodic rules count from now.
  {
    std::lock_guard lk(impl_->state_m);
    const std::uint64_t now = now_ns();
    for (auto& r : impl_->rules)
      if (r->period_ns) r->next_due = now + r->period_ns;
  }
  impl_->running.store(true);
  impl_->th = std::thread([p = impl_.get()] { p->thread_main(); });
}

void engine::stop() {
  if (!impl_->th.joinable()) return;
  {
    std::lock_guard lk(impl_->qm);
    queued q;
    q.kind = queued::event;
    q.ev.time_ns = now_ns();
    q.ev.name = "stop";
    impl_->queue.push_back(std::move(q));
    impl_->stopping = true;
  }
  impl_->qcv.notify_all();
  if (!impl_->wait_thread_end()) {
    impl_->th.detach();
    impl_->running.store(false);
    impl_->sync_cv.notify_all();
    return;
  }
  impl_->th.join();
  impl_->running.store(false);
  // Anything that arrived during the last moments.
  impl_->drain();
}

bool engine::running() const noexcept {
  return impl_->running.load();
}

void engine::feed_sample(const instrumentation::counter_snapshot& s) {
  std::lock_guard lk(impl_->qm);
  impl_->slot = s;  // reuses the slot's storage while the layout stays the same
  if (!impl_->sample_queued) {
    impl_->sample_queued = true;
    queued q;
    q.kind = queued::sample;
    impl_->queue.push_back(std::move(q));
    impl_->qcv.notify_one();
  }
}

void engine::feed_event(const instrumentation::app_event& e) {
  if (reserved_event(e.name)) return;
  std::lock_guard lk(impl_->qm);
  if (impl_->queue.size() >= impl_->opts.max_queued_events) {
    impl_->dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  queued q;
  q.kind = queued::event;
  q.ev = e;
  impl_->queue.push_back(std::move(q));
  impl_->qcv.notify_one();
}

void engine::pump() {
  if (impl_->abandoned.load()) return;
  if (impl_->running.load()) {
    std::unique_lock lk(impl_->qm);
    const std::uint64_t ticket = ++impl_->sync_issued;
    queued q;
    q.kind = queued::sync;
    q.sync_ticket = ticket;
    impl_->queue.push_back(std::move(q));
    impl_->qcv.notify_one();
    impl_->wait_ticket(lk, ticket);
    return;
  }
  impl_->drain();
  std::lock_guard lk(impl_->state_m);
  impl_->run_due_timers();
}

void engine::run_periodic_now() {
  if (impl_->abandoned.load()) return;
  std::lock_guard lk(impl_->state_m);
  for (auto& r : impl_->rules)
    if (r->period_ns) r->next_due = 0;
  impl_->run_due_timers();
}

std::vector<rule_info> engine::rules() const {
  if (impl_->abandoned.load()) return impl_->abandoned_rules;
  // The policy thread holds the lock while it handles an input: wait for it, but not for a
  // rule stuck past its time limit. (Polled: ThreadSanitizer misreads the timed lock.)
  std::unique_lock lk(impl_->state_m, std::try_to_lock);
  const std::uint64_t bound = now_ns() + impl_->stuck_after_ns();
  while (!lk.owns_lock()) {
    if (now_ns() >= bound) {
      rule_info info;
      if (impl_->stuck_rule(&info).empty()) return {};
      info.disabled = false;
      info.last_error = "running past its time limit";
      return {info};
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    (void)lk.try_lock();
  }
  std::vector<rule_info> v;
  for (auto& r : impl_->rules) {
    rule_info i;
    i.name = r->name;
    i.trigger = r->trigger;
    i.calls = r->calls;
    i.errors = r->errors;
    i.consecutive_errors = r->consecutive_errors;
    i.disabled = r->disabled;
    i.last_error = r->last_error;
    v.push_back(std::move(i));
  }
  return v;
}

std::uint64_t engine::dropped_events() const noexcept {
  return impl_->dropped.load();
}

std::uint64_t engine::thread_cpu_ns() const noexcept {
  if (impl_->have_clock.load(std::memory_order_acquire)) return cpu_ns(impl_->cpu_clock);
  return impl_->final_cpu;
}

std::size_t engine::lua_memory() const noexcept {
  return impl_->mem_used.load(std::memory_order_relaxed);
}

}  // namespace grain::policy
