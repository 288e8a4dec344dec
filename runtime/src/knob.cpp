#include "grain/knob.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "grain/clock.hpp"

namespace grain {

namespace {
constexpr std::size_t history_max = 100000;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

knob::knob(std::string name, knob_type type, double min, double max, double step, double def,
           std::string description, std::vector<std::string> enum_values)
    : name_(std::move(name)),
      type_(type),
      min_(min),
      max_(max),
      step_(step),
      default_(def),
      description_(std::move(description)),
      enum_values_(std::move(enum_values)),
      bits_(std::bit_cast<std::uint64_t>(def)) {}

std::string knob::enum_name() const {
  if (type_ != knob_type::enumeration) return {};
  auto i = static_cast<std::size_t>(int_value());
  return i < enum_values_.size() ? enum_values_[i] : std::string();
}

std::pair<double, bool> knob::clamp(double requested) const noexcept {
  const double lo = min(), hi = max();
  double v = requested;
  if (std::isnan(v)) v = default_value();
  v = std::min(hi, std::max(lo, v));
  if (type_ != knob_type::real) {
    const double step = step_ > 0 ? step_ : 1;
    v = lo + std::round((v - lo) / step) * step;
    v = std::min(hi, std::max(lo, v));
  }
  return {v, v != requested};
}

std::string knob::format(double v) const {
  if (type_ == knob_type::enumeration) {
    auto i = static_cast<std::size_t>(v);
    if (v >= 0 && i < enum_values_.size()) return enum_values_[i];
  }
  if (type_ != knob_type::real && std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e18)
    return std::to_string(static_cast<long long>(v));
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back as v
  return std::string(buf, res.ptr);
}

std::string knob::describe_range() const {
  switch (type_) {
    case knob_type::integer: {
      std::string s = "int [" + format(min()) + ", " + format(max()) + "]";
      if (step_ != 1) s += " step " + format(step_);
      return s;
    }
    case knob_type::real:
      return "double [" + format(min()) + ", " + format(max()) + "]";
    case knob_type::enumeration:
      return "enum {" + join(enum_values_) + "}";
  }
  return {};
}

decision_record knob::set(double requested, std::string_view reason, std::string_view rule,
                          std::vector<std::pair<std::string, double>> trigger) {
  decision_record r;
  // Held through the callbacks and the listeners, so that they see the changes of this knob in
  // the order they were stored (a pool never ends at an older size). Recursive: a callback or
  // listener on this thread may set the knob again.
  std::lock_guard lock(set_mutex_);
  auto [v, clamped] = clamp(requested);
  r.time_ns = now_ns();
  r.rule = rule;
  r.knob = name_;
  r.type = type_;
  r.old_value = value();
  r.new_value = v;
  r.requested = requested;
  r.clamped = clamped;
  r.reason = reason;
  r.trigger = std::move(trigger);
  bits_.store(std::bit_cast<std::uint64_t>(v), std::memory_order_relaxed);
  const auto callbacks = callbacks_;  // a callback may register another
  for (auto& cb : callbacks) cb(r.old_value, r.new_value);
  if (registry_) registry_->publish(r);
  return r;
}

decision_record knob::set(std::string_view enum_value, std::string_view reason,
                          std::string_view rule,
                          std::vector<std::pair<std::string, double>> trigger) {
  return set(parse(enum_value), reason, rule, std::move(trigger));
}

double knob::parse(std::string_view text) const {
  if (type_ == knob_type::enumeration) {
    for (std::size_t i = 0; i < enum_values_.size(); ++i)
      if (enum_values_[i] == text) return static_cast<double>(i);
    throw std::invalid_argument("knob " + name_ + ": '" + std::string(text) + "' is not one of " +
                                join(enum_values_));
  }
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || std::isnan(v))
    throw std::invalid_argument("knob " + name_ + ": '" + s + "' is not a number");
  if (type_ == knob_type::integer && v != std::floor(v))
    throw std::invalid_argument("knob " + name_ + ": '" + s + "' is not an integer");
  return v;
}

void knob::on_change(std::function<void(double, double)> fn) {
  std::lock_guard lock(set_mutex_);
  callbacks_.push_back(std::move(fn));
}

void knob::clear_callbacks() {
  std::lock_guard lock(set_mutex_);
  callbacks_.clear();
}

void knob::reset_range(double min, double max, double def) {
  std::lock_guard lock(set_mutex_);
  min_.store(min, std::memory_order_relaxed);
  max_.store(max, std::memory_order_relaxed);
  default_.store(def, std::memory_order_relaxed);
  bits_.store(std::bit_cast<std::uint64_t>(def), std::memory_order_relaxed);
}

knob& knob_registry::define(std::unique_ptr<knob> k) {
  k->registry_ = this;
  std::string initial, rule;
  knob* out = nullptr;
  {
    std::lock_guard lock(mutex_);
    for (auto& e : knobs_) {
      if (e->name() == k->name()) {
        if (e->type() != k->type())
          throw std::invalid_argument("knob " + k->name() +
                                      " is already defined with another type");
        return *e;
      }
    }
    auto it = std::find_if(pending_.begin(), pending_.end(),
                           [&](auto& p) { return p.first == k->name(); });
    if (it != pending_.end()) {
      initial = it->second.first;
      rule = it->second.second;
      pending_.erase(it);
    }
    knobs_.push_back(std::move(k));
    out = knobs_.back().get();
  }
  if (!rule.empty()) apply_initial(*out, initial, rule);
  return *out;
}

void knob_registry::apply_initial(knob& k, const std::string& text, std::string_view rule) {
  double v = 0;
  try {
    v = k.parse(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(e.what()) + " (range " + k.describe_range() + ")");
  }
  if (k.clamp(v).second)
    throw std::out_of_range("knob " + k.name() + ": " + text + " is outside its range " +
                            k.describe_range());
  k.set(v, "--grain:knob=" + k.name() + "=" + text, rule);
}

void knob_registry::set_initial(std::string_view name, std::string_view text,
                                std::string_view rule) {
  if (knob* k = find(name)) {
    apply_initial(*k, std::string(text), rule);
    return;
  }
  std::lock_guard lock(mutex_);
  for (auto& p : pending_) {
    if (p.first == name) {
      p.second = {std::string(text), std::string(rule)};
      return;
    }
  }
  pending_.push_back({std::string(name), {std::string(text), std::string(rule)}});
}

std::vector<std::string> knob_registry::pending_initial() const {
  std::vector<std::string> v;
  {
    std::lock_guard lock(mutex_);
    for (auto& p : pending_) v.push_back(p.first);
  }
  std::sort(v.begin(), v.end());
  return v;
}

void knob_registry::clear_initial() {
  std::lock_guard lock(mutex_);
  pending_.clear();
}

knob& knob_registry::define_int(std::string name, std::int64_t min, std::int64_t max,
                                std::int64_t def, std::string description, std::int64_t step) {
  if (min > max || def < min || def > max || step <= 0)
    throw std::invalid_argument("knob " + name + ": need min <= default <= max and step > 0");
  auto k = std::make_unique<knob>(std::move(name), knob_type::integer, static_cast<double>(min),
                                  static_cast<double>(max), static_cast<double>(step),
                                  static_cast<double>(def), std::move(description));
  return define(std::move(k));
}

knob& knob_registry::define_double(std::string name, double min, double max, double def,
                                   std::string description) {
  if (!(min <= def && def <= max))
    throw std::invalid_argument("knob " + name + ": need min <= default <= max");
  auto k = std::make_unique<knob>(std::move(name), knob_type::real, min, max, 0.0, def,
                                  std::move(description));
  return define(std::move(k));
}

knob& knob_registry::define_enum(std::string name, std::vector<std::string> values,
                                 std::string_view def, std::string description) {
  auto it = std::find(values.begin(), values.end(), def);
  if (values.empty() || it == values.end())
    throw std::invalid_argument("knob " + name + ": the default must be one of the values");
  const double d = static_cast<double>(it - values.begin());
  const double max = static_cast<double>(values.size() - 1);
  auto k = std::make_unique<knob>(std::move(name), knob_type::enumeration, 0.0, max, 1.0, d,
                                  std::move(description), std::move(values));
  return define(std::move(k));
}

knob* knob_registry::find(std::string_view name) noexcept {
  std::lock_guard lock(mutex_);
  for (auto& k : knobs_)
    if (k->name() == name) return k.get();
  return nullptr;
}

knob& knob_registry::at(std::string_view name) {
  if (knob* k = find(name)) return *k;
  throw std::out_of_range("no knob named '" + std::string(name) + "' (known knobs: " + names() +
                          ")");
}

std::vector<knob*> knob_registry::all() {
  std::lock_guard lock(mutex_);
  std::vector<knob*> v;
  for (auto& k : knobs_) v.push_back(k.get());
  std::sort(v.begin(), v.end(), [](knob* a, knob* b) { return a->name() < b->name(); });
  return v;
}

std::string knob_registry::names() const {
  std::vector<std::string> n;
  {
    std::lock_guard lock(mutex_);
    for (auto& k : knobs_) n.push_back(k->name());
  }
  std::sort(n.begin(), n.end());
  return join(n);
}

int knob_registry::add_listener(std::function<void(const decision_record&)> fn) {
  std::lock_guard lock(mutex_);
  listeners_.emplace_back(++next_listener_, std::move(fn));
  return next_listener_;
}

void knob_registry::remove_listener(int id) {
  std::lock_guard lock(mutex_);
  listeners_.erase(
      std::remove_if(listeners_.begin(), listeners_.end(), [id](auto& e) { return e.first == id; }),
      listeners_.end());
}

std::vector<decision_record> knob_registry::decisions() const {
  std::lock_guard lock(mutex_);
  return {history_.begin(), history_.end()};
}

void knob_registry::publish(const decision_record& r) {
  std::vector<std::function<void(const decision_record&)>> ls;
  {
    std::lock_guard lock(mutex_);
    history_.push_back(r);
    if (history_.size() > history_max) history_.pop_front();
    for (auto& [id, fn] : listeners_) ls.push_back(fn);
  }
  for (auto& fn : ls) fn(r);
}

knob_registry& knobs() {
  static knob_registry* r = new knob_registry();  // outlives every static that may log decisions
  return *r;
}

}  // namespace grain
