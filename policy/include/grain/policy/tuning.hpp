#pragma once
// Search strategies for tuning knobs (APEX-style tuning requests, in C++).
//
// A strategy proposes points (one value per parameter) and is told the cost of each; it
// minimises (a goal "max" is handled by the caller negating the metric). Strategies work in
// normalised coordinates [0,1]^d and snap to each parameter's grid: integers to min + k*step,
// enumerations to an index, doubles are continuous (exhaustive search uses `double_levels`
// points per double parameter). Points already evaluated are not evaluated again: their cost
// is remembered, which keeps discrete searches within budget.
//
// Strategies and their default evaluation budgets (d = number of parameters):
//   exhaustive   every grid point, in order (budget = grid size; a smaller budget stops early)
//   random       uniform samples; budget 30
//   nelder_mead  Nelder-Mead simplex (reflect 1, expand 2, contract 0.5, shrink 0.5) from the
//                initial point with edges of 0.5; stops when the simplex is smaller than the
//                grid resolution; budget 15 + 15*d
//   hill_climb   pattern search: try +-h along each axis, move on improvement, halve h after a
//                round without one, stop when h is below the resolution; budget 15 + 15*d
//   annealing    simulated annealing, temperature 1 -> 0.01 geometrically over the budget,
//                Gaussian neighbours shrinking with the temperature; budget 60
//   genetic      steady-state genetic search: population 8, tournament selection, uniform
//                crossover, Gaussian mutation; budget 80
// The tests (tests/policy/tuning_test.cpp) check that each converges on noisy synthetic
// objectives within these budgets.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "grain/knob.hpp"

namespace grain::policy::tuning {

struct parameter {
  std::string name;
  knob_type type = knob_type::real;
  double min = 0, max = 1;
  double step = 0;                  // integers: grid step (>= 1); doubles: 0 = continuous
  std::vector<std::string> values;  // enumerations: the names (index = value)
  double initial = 0;               // where local searches start

  // The parameter of a knob: its type, range, step and current value as the start.
  static parameter from_knob(const knob& k);
  // Number of grid points; 0 for a continuous double.
  std::size_t levels() const noexcept;
  double from_unit(double u) const noexcept;  // snapped to the grid
  double to_unit(double v) const noexcept;
  double resolution() const noexcept;  // in unit coordinates: half a grid step, or 1e-3
};

using point = std::vector<double>;

struct strategy_options {
  std::size_t budget = 0;  // evaluations; 0: the strategy's default (see above)
  std::uint64_t seed = 42;
  std::size_t double_levels = 11;  // exhaustive: points per continuous parameter
};

class strategy {
 public:
  strategy(std::vector<parameter> params, strategy_options opts);
  virtual ~strategy() = default;
  strategy(const strategy&) = delete;
  strategy& operator=(const strategy&) = delete;

  // The next point to evaluate, or nullopt when the search is over (converged or budget
  // spent). Call tell() with its cost before asking again.
  std::optional<point> ask();
  void tell(double cost);

  bool done() const noexcept { return done_; }
  // True when the strategy stopped on its own criterion, false when the budget ran out.
  bool converged() const noexcept { return converged_; }
  const point& best() const noexcept { return best_; }
  double best_cost() const noexcept { return best_cost_; }
  std::size_t evaluations() const noexcept { return evaluations_; }
  std::size_t budget() const noexcept { return budget_; }
  const std::vector<parameter>& parameters() const noexcept { return params_; }
  virtual std::string name() const = 0;

 protected:
  // Implementations: propose a point in [0,1]^d (nullopt: converged), then observe its cost.
  virtual std::optional<point> next_unit() = 0;
  virtual void observe(const point& unit, double cost) = 0;
  point snap(const point& unit) const;
  point initial_unit() const;
  point random_unit();  // uniform in [0,1]^d, from rng_
  std::size_t dims() const noexcept { return params_.size(); }
  double resolution() const noexcept;  // smallest per-parameter resolution
  std::vector<parameter> params_;
  strategy_options opts_;
  std::mt19937_64 rng_;
  std::size_t budget_ = 0;

 private:
  std::map<point, double> memo_;
  std::optional<point> pending_unit_, pending_point_;
  point best_;
  double best_cost_ = 0;
  std::size_t evaluations_ = 0;
  bool done_ = false, converged_ = false;
};

// "exhaustive", "random", "nelder_mead", "hill_climb", "annealing", "genetic".
// Throws std::invalid_argument naming the strategies for another name, or for an empty
// parameter list.
std::unique_ptr<strategy> make_strategy(std::string_view name, std::vector<parameter> params,
                                        strategy_options opts = {});
std::vector<std::string> strategy_names();

}  // namespace grain::policy::tuning
