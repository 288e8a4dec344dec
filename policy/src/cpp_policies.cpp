// C++ policies registered process-wide: they join the engine of the running runtime, or wait
// for the next one.
#include <map>
#include <mutex>
#include <variant>

#include "grain/policy/policy.hpp"
#include "policy_internal.hpp"

namespace grain::policy {
namespace {

struct registration {
  enum { event, periodic, tuner } kind;
  std::string event_name;
  std::chrono::milliseconds period{0};
  cpp_policy fn;
  std::string name;
  tune_request tune;
  int engine_id = 0;  // in the attached engine, 0 when not attached
};

struct registry_t {
  std::mutex m;
  std::map<int, registration> regs;
  int next = 0;
  engine* attached = nullptr;
};

registry_t& reg() {
  static registry_t* r = new registry_t();
  return *r;
}

int add_to(engine& e, registration& r) {
  switch (r.kind) {
    case registration::event:
      return e.add_policy(r.event_name, r.fn, r.name);
    case registration::periodic:
      return e.add_periodic_policy(r.period, r.fn, r.name);
    case registration::tuner:
      return e.add_tuner(r.tune);
  }
  return 0;
}

int add(registration r) {
  auto& g = reg();
  std::lock_guard lk(g.m);
  const int id = ++g.next;
  if (g.attached) r.engine_id = add_to(*g.attached, r);
  g.regs.emplace(id, std::move(r));
  return id;
}

}  // namespace

namespace detail {

void attach_cpp_policies(engine& e) {
  auto& g = reg();
  std::lock_guard lk(g.m);
  g.attached = &e;
  for (auto& [id, r] : g.regs) r.engine_id = add_to(e, r);
}

void detach_cpp_policies(engine& e) {
  auto& g = reg();
  std::lock_guard lk(g.m);
  if (g.attached != &e) return;
  g.attached = nullptr;
  for (auto& [id, r] : g.regs) r.engine_id = 0;
}

}  // namespace detail

int register_policy(std::string event_name, cpp_policy fn, std::string name) {
  registration r{
      registration::event, std::move(event_name), {}, std::move(fn), std::move(name), {}, 0};
  return add(std::move(r));
}

int register_periodic_policy(std::chrono::milliseconds period, cpp_policy fn, std::string name) {
  if (period.count() < 1) throw std::invalid_argument("policy period must be >= 1 ms");
  registration r{registration::periodic, "", period, std::move(fn), std::move(name), {}, 0};
  return add(std::move(r));
}

int register_tuner(tune_request t) {
  // Validate now (unknown strategy or knob) rather than when the runtime starts.
  (void)tuning::make_strategy(t.strategy, t.parameters, t.options);
  for (auto& p : t.parameters) (void)knobs().at(p.name);
  registration r{registration::tuner, "", {}, {}, "", std::move(t), 0};
  return add(std::move(r));
}

void unregister_policy(int id) {
  auto& g = reg();
  std::lock_guard lk(g.m);
  auto it = g.regs.find(id);
  if (it == g.regs.end()) return;
  if (g.attached && it->second.engine_id) g.attached->remove_rule(it->second.engine_id);
  g.regs.erase(it);
}

decision_record set_knob(std::string_view knob, double value, std::string_view reason,
                         std::string_view rule) {
  return knobs().at(knob).set(value, reason, rule);
}

}  // namespace grain::policy
