#include "grain/knob.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
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
  double v = requested;
  if (std::isnan(v)) v = default_;
  v = std::min(max_, std::max(min_, v));
  if (type_ != knob_type::real) {
    const double step = step_ > 0 ? step_ : 1;
    v = min_ + std::round((v - min_) / step) * step;
    v = std::min(max_, std::max(min_, v));
  }
  return {v, v != requested};
}

decision_record knob::set(double requested, std::string_view reason, std::string_view rule,
                          std::vector<std::pair<std::string, double>> trigger) {
  decision_record r;
  std::vector<std::function<void(double, double)>> callbacks;
  {
    std::lock_guard lock(set_mutex_);
    auto [v, clamped] = clamp(requested);
    r.time_ns = now_ns();
    r.rule = rule;
    r.knob = name_;
    r.old_value = value();
    r.new_value = v;
    r.requested = requested;
    r.clamped = clamped;
    r.reason = reason;
    r.trigger = std::move(trigger);
    bits_.store(std::bit_cast<std::uint64_t>(v), std::memory_order_relaxed);
    callbacks = callbacks_;
  }
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
  min_ = min;
  max_ = max;
  default_ = def;
  bits_.store(std::bit_cast<std::uint64_t>(def), std::memory_order_relaxed);
}

namespace {
knob& define(knob_registry& reg, std::mutex& m, std::deque<std::unique_ptr<knob>>& knobs,
             std::unique_ptr<knob> k) {
  std::lock_guard lock(m);
  for (auto& e : knobs) {
    if (e->name() == k->name()) {
      if (e->type() != k->type())
        throw std::invalid_argument("knob " + k->name() + " is already defined with another type");
      return *e;
    }
  }
  knobs.push_back(std::move(k));
  (void)reg;
  return *knobs.back();
}
}  // namespace

knob& knob_registry::define_int(std::string name, std::int64_t min, std::int64_t max,
                                std::int64_t def, std::string description, std::int64_t step) {
  if (min > max || def < min || def > max || step <= 0)
    throw std::invalid_argument("knob " + name + ": need min <= default <= max and step > 0");
  auto k = std::make_unique<knob>(std::move(name), knob_type::integer, static_cast<double>(min),
                                  static_cast<double>(max), static_cast<double>(step),
                                  static_cast<double>(def), std::move(description));
  k->registry_ = this;
  return define(*this, mutex_, knobs_, std::move(k));
}

knob& knob_registry::define_double(std::string name, double min, double max, double def,
                                   std::string description) {
  if (!(min <= def && def <= max))
    throw std::invalid_argument("knob " + name + ": need min <= default <= max");
  auto k = std::make_unique<knob>(std::move(name), knob_type::real, min, max, 0.0, def,
                                  std::move(description));
  k->registry_ = this;
  return define(*this, mutex_, knobs_, std::move(k));
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
  k->registry_ = this;
  return define(*this, mutex_, knobs_, std::move(k));
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
