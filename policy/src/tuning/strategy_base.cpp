// The tuning parameters (a knob's range in the unit interval) and what every search strategy
// shares: snapping to the knobs' steps, the first and random points, ask and tell. The
// strategies themselves: strategies.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "grain/policy/tuning.hpp"

namespace grain::policy::tuning {

// ---- parameter -------------------------------------------------------------------------

parameter parameter::from_knob(const knob& k) {
  parameter p;
  p.name = k.name();
  p.type = k.type();
  p.min = k.min();
  p.max = k.max();
  p.step = k.type() == knob_type::real ? 0.0 : (k.step() > 0 ? k.step() : 1.0);
  p.values = k.enum_values();
  p.initial = k.value();
  return p;
}

std::size_t parameter::levels() const noexcept {
  if (max <= min) return 1;
  if (type == knob_type::enumeration) return values.empty() ? 1 : values.size();
  if (type == knob_type::integer || step > 0) {
    const double s = step > 0 ? step : 1.0;
    return static_cast<std::size_t>(std::floor((max - min) / s + 1e-9)) + 1;
  }
  return 0;
}

double parameter::from_unit(double u) const noexcept {
  u = std::clamp(u, 0.0, 1.0);
  const std::size_t n = levels();
  if (n == 1) return min;
  if (n == 0) return min + u * (max - min);
  const double k = std::round(u * static_cast<double>(n - 1));
  if (type == knob_type::enumeration) return k;
  const double s = step > 0 ? step : 1.0;
  return std::min(max, min + k * s);
}

double parameter::to_unit(double v) const noexcept {
  if (max <= min) return 0;
  const std::size_t n = levels();
  if (n > 1) {
    const double s = type == knob_type::enumeration ? 1.0 : (step > 0 ? step : 1.0);
    const double k = std::round((v - min) / s);
    return std::clamp(k / static_cast<double>(n - 1), 0.0, 1.0);
  }
  return std::clamp((v - min) / (max - min), 0.0, 1.0);
}

double parameter::resolution() const noexcept {
  const std::size_t n = levels();
  if (n == 1) return 1.0;
  if (n == 0) return 1e-3;
  return 0.5 / static_cast<double>(n - 1);
}

// ---- strategy base ---------------------------------------------------------------------

strategy::strategy(std::vector<parameter> params, strategy_options opts)
    : params_(std::move(params)), opts_(opts), rng_(opts.seed) {
  if (params_.empty()) throw std::invalid_argument("tuning: no parameter to tune");
  for (auto& p : params_)
    if (!(p.min <= p.max))
      throw std::invalid_argument("tuning: parameter " + p.name + " has min > max");
}

point strategy::snap(const point& unit) const {
  point p(unit.size());
  for (std::size_t i = 0; i < unit.size(); ++i) p[i] = params_[i].from_unit(unit[i]);
  return p;
}

point strategy::initial_unit() const {
  point u(dims());
  for (std::size_t i = 0; i < dims(); ++i) u[i] = params_[i].to_unit(params_[i].initial);
  return u;
}

point strategy::random_unit() {
  std::uniform_real_distribution<double> d(0.0, 1.0);
  point u(dims());
  for (auto& x : u) x = d(rng_);
  return u;
}

double strategy::resolution() const noexcept {
  double r = 1.0;
  for (auto& p : params_) r = std::min(r, p.resolution());
  return r;
}

std::optional<point> strategy::ask() {
  if (done_) return std::nullopt;
  if (pending_point_) return pending_point_;
  // Points seen before are answered from memory; a strategy that keeps proposing them (a
  // collapsed simplex on a coarse grid) is stopped after many in a row.
  for (int repeats = 0; repeats < 10000; ++repeats) {
    std::optional<point> u = next_unit();
    if (!u) {
      done_ = true;
      converged_ = true;
      return std::nullopt;
    }
    if (evaluations_ >= budget_) {
      done_ = true;
      return std::nullopt;
    }
    for (double& x : *u) x = std::clamp(x, 0.0, 1.0);
    point p = snap(*u);
    if (auto it = memo_.find(p); it != memo_.end()) {
      observe(*u, it->second);
      continue;
    }
    pending_unit_ = std::move(u);
    pending_point_ = std::move(p);
    return pending_point_;
  }
  done_ = true;
  converged_ = true;
  return std::nullopt;
}

void strategy::tell(double cost) {
  if (!pending_point_) return;
  if (std::isnan(cost)) cost = std::numeric_limits<double>::infinity();
  point p = std::move(*pending_point_);
  point u = std::move(*pending_unit_);
  pending_point_.reset();
  pending_unit_.reset();
  memo_[p] = cost;
  if (evaluations_ == 0 || cost < best_cost_) {
    best_ = p;
    best_cost_ = cost;
  }
  ++evaluations_;
  observe(u, cost);
}

}  // namespace grain::policy::tuning
