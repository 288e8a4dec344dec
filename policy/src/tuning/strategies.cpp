// Search strategies: exhaustive, random, Nelder-Mead, hill climbing, simulated annealing,
// genetic. See grain/policy/tuning.hpp for the budgets and stopping rules.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "grain/policy/tuning.hpp"

namespace grain::policy::tuning {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// ---- exhaustive --------------------------------------------------------------------------

class exhaustive final : public strategy {
 public:
  exhaustive(std::vector<parameter> p, strategy_options o) : strategy(std::move(p), o) {
    std::size_t total = 1;
    for (auto& q : params_) {
      std::size_t n = q.levels();
      if (n == 0) n = std::max<std::size_t>(2, opts_.double_levels);
      levels_.push_back(n);
      if (total > 10'000'000 / n)
        throw std::invalid_argument("tuning: exhaustive search over more than 10^7 points");
      total *= n;
    }
    total_ = total;
    budget_ = opts_.budget ? std::min(opts_.budget, total) : total;
    index_.assign(dims(), 0);
  }
  std::string name() const override { return "exhaustive"; }

 protected:
  std::optional<point> next_unit() override {
    if (next_ >= total_) return std::nullopt;
    point u(dims());
    for (std::size_t i = 0; i < dims(); ++i)
      u[i] = levels_[i] > 1 ? static_cast<double>(index_[i]) / static_cast<double>(levels_[i] - 1)
                            : 0.0;
    ++next_;
    for (std::size_t i = 0; i < dims(); ++i) {  // mixed-radix increment
      if (++index_[i] < levels_[i]) break;
      index_[i] = 0;
    }
    return u;
  }
  void observe(const point&, double) override {}

 private:
  std::vector<std::size_t> levels_, index_;
  std::size_t total_ = 0, next_ = 0;
};

// ---- random ------------------------------------------------------------------------------

class random_search final : public strategy {
 public:
  random_search(std::vector<parameter> p, strategy_options o) : strategy(std::move(p), o) {
    budget_ = opts_.budget ? opts_.budget : 30;
  }
  std::string name() const override { return "random"; }

 protected:
  std::optional<point> next_unit() override { return random_unit(); }
  void observe(const point&, double) override {}
};

// ---- Nelder-Mead -------------------------------------------------------------------------

class nelder_mead final : public strategy {
 public:
  nelder_mead(std::vector<parameter> p, strategy_options o) : strategy(std::move(p), o) {
    budget_ = opts_.budget ? opts_.budget : 15 + 15 * dims();
    const point x0 = initial_unit();
    simplex_.push_back(x0);
    for (std::size_t i = 0; i < dims(); ++i) {
      point x = x0;
      x[i] = x0[i] + 0.5 <= 1.0 ? x0[i] + 0.5 : x0[i] - 0.5;
      simplex_.push_back(x);
    }
    f_.assign(simplex_.size(), inf);
  }
  std::string name() const override { return "nelder_mead"; }

 protected:
  enum class phase { init, reflect, expand, contract, shrink };

  std::optional<point> next_unit() override {
    if (converged_flag_) return std::nullopt;
    switch (phase_) {
      case phase::init:
      case phase::shrink:
        return simplex_[k_];
      default:
        break;
    }
    return trial_;
  }

  void observe(const point& u, double cost) override {
    const std::size_t n = dims();
    switch (phase_) {
      case phase::init:
      case phase::shrink:
        f_[k_] = cost;
        if (++k_ < simplex_.size()) return;
        start_iteration();
        return;
      case phase::reflect:
        xr_ = u;
        fr_ = cost;
        if (fr_ < f_[0]) {
          trial_ = along(centroid_, xr_, 2.0);  // expand
          phase_ = phase::expand;
        } else if (fr_ < f_[n - 1]) {
          replace_worst(xr_, fr_);
        } else {
          inside_ = !(fr_ < f_[n]);
          trial_ = inside_ ? along(centroid_, simplex_[n], 0.5) : along(centroid_, xr_, 0.5);
          phase_ = phase::contract;
        }
        return;
      case phase::expand:
        if (cost < fr_)
          replace_worst(u, cost);
        else
          replace_worst(xr_, fr_);
        return;
      case phase::contract:
        if ((inside_ && cost < f_[n]) || (!inside_ && cost <= fr_)) {
          replace_worst(u, cost);
        } else {
          for (std::size_t i = 1; i < simplex_.size(); ++i)
            simplex_[i] = along(simplex_[0], simplex_[i], 0.5);
          phase_ = phase::shrink;
          k_ = 1;
        }
        return;
    }
  }

 private:
  // a + t*(b - a)
  static point along(const point& a, const point& b, double t) {
    point r(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) r[i] = std::clamp(a[i] + t * (b[i] - a[i]), 0., 1.);
    return r;
  }

  void replace_worst(const point& x, double f) {
    simplex_.back() = x;
    f_.back() = f;
    start_iteration();
  }

  void start_iteration() {
    // Sort vertices by cost.
    std::vector<std::size_t> idx(simplex_.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](auto a, auto b) { return f_[a] < f_[b]; });
    std::vector<point> s;
    std::vector<double> f;
    for (auto i : idx) {
      s.push_back(simplex_[i]);
      f.push_back(f_[i]);
    }
    simplex_ = std::move(s);
    f_ = std::move(f);
    // Converged when the simplex is below the grid resolution in every direction.
    double diam = 0;
    for (std::size_t i = 1; i < simplex_.size(); ++i)
      for (std::size_t j = 0; j < dims(); ++j)
        diam = std::max(diam, std::fabs(simplex_[i][j] - simplex_[0][j]));
    if (diam < resolution()) {
      phase_ = phase::reflect;
      converged_flag_ = true;
      return;
    }
    const std::size_t n = dims();
    centroid_.assign(n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) centroid_[j] += simplex_[i][j] / static_cast<double>(n);
    trial_ = along(centroid_, simplex_[n], -1.0);  // reflect: c + (c - worst)
    phase_ = phase::reflect;
  }

 private:
  std::vector<point> simplex_;
  std::vector<double> f_;
  point centroid_, trial_, xr_;
  double fr_ = inf;
  bool inside_ = false, converged_flag_ = false;
  phase phase_ = phase::init;
  std::size_t k_ = 0;
};

// ---- hill climbing (pattern search) ------------------------------------------------------

class hill_climb final : public strategy {
 public:
  hill_climb(std::vector<parameter> p, strategy_options o) : strategy(std::move(p), o) {
    budget_ = opts_.budget ? opts_.budget : 15 + 15 * dims();
    x_ = initial_unit();
    h_ = 0.25;
  }
  std::string name() const override { return "hill_climb"; }

 protected:
  std::optional<point> next_unit() override {
    if (!have_current_) return x_;
    if (h_ < resolution()) return std::nullopt;
    point t = x_;
    const std::size_t dim = move_ / 2;
    t[dim] += (move_ % 2 == 0 ? h_ : -h_);
    return t;
  }
  void observe(const point& u, double cost) override {
    if (!have_current_) {
      have_current_ = true;
      fx_ = cost;
      return;
    }
    if (cost < fx_) {  // move there; keep trying the same direction first
      x_ = u;
      fx_ = cost;
      improved_ = true;
      return;
    }
    if (++move_ >= 2 * dims()) {
      move_ = 0;
      if (!improved_) h_ *= 0.5;
      improved_ = false;
    }
  }

 private:
  point x_;
  double fx_ = inf, h_;
  std::size_t move_ = 0;
  bool have_current_ = false, improved_ = false;
};

// ---- simulated annealing -----------------------------------------------------------------

class annealing final : public strategy {
 public:
  annealing(std::vector<parameter> p, strategy_options o) : strategy(std::move(p), o) {
    budget_ = opts_.budget ? opts_.budget : 60;
    x_ = initial_unit();
  }
  std::string name() const override { return "annealing"; }

 protected:
  double temperature() const {
    const double frac =
        budget_ > 1 ? static_cast<double>(step_) / static_cast<double>(budget_ - 1) : 1.0;
    return std::pow(0.01, std::min(1.0, frac));  // 1 -> 0.01
  }
  std::optional<point> next_unit() override {
    if (!have_current_) return x_;
    const double t = temperature();
    std::normal_distribution<double> n(0.0, 0.35 * std::sqrt(t));
    point y = x_;
    for (std::size_t i = 0; i < dims(); ++i) {
      double d = n(rng_);
      // On a grid, move at least one step so the neighbour differs.
      const double r = 2 * params_[i].resolution();
      if (params_[i].levels() > 1 && std::fabs(d) < r) d = d < 0 ? -r : r;
      y[i] = std::clamp(y[i] + d, 0.0, 1.0);
    }
    return y;
  }
  void observe(const point& u, double cost) override {
    ++step_;
    if (!have_current_) {
      have_current_ = true;
      fx_ = cost;
      scale_ = std::max(std::fabs(cost), 1e-12);
      return;
    }
    scale_ = std::max(scale_ * 0.9, std::fabs(cost - fx_));  // typical cost differences
    const double delta = (cost - fx_) / std::max(scale_, 1e-12);
    std::uniform_real_distribution<double> d(0.0, 1.0);
    if (delta <= 0 || d(rng_) < std::exp(-delta / temperature())) {
      x_ = u;
      fx_ = cost;
    }
  }

 private:
  point x_;
  double fx_ = inf, scale_ = 1;
  std::size_t step_ = 0;
  bool have_current_ = false;
};

// ---- genetic -------------------------------------------------------------------------------

class genetic final : public strategy {
 public:
  genetic(std::vector<parameter> p, strategy_options o) : strategy(std::move(p), o) {
    budget_ = opts_.budget ? opts_.budget : 80;
  }
  std::string name() const override { return "genetic"; }

 protected:
  std::optional<point> next_unit() override {
    std::uniform_real_distribution<double> d(0.0, 1.0);
    if (pop_.size() < pop_size) {
      if (pop_.empty()) return initial_unit();
      return random_unit();
    }
    const point& a = tournament();
    const point& b = tournament();
    point c(dims());
    std::normal_distribution<double> m(0.0, 0.1);
    for (std::size_t i = 0; i < dims(); ++i) {
      c[i] = d(rng_) < 0.5 ? a[i] : b[i];
      if (d(rng_) < 0.3) c[i] = std::clamp(c[i] + m(rng_), 0.0, 1.0);
    }
    return c;
  }
  void observe(const point& u, double cost) override {
    if (pop_.size() < pop_size) {
      pop_.push_back({u, cost});
      return;
    }
    auto worst = std::max_element(pop_.begin(), pop_.end(),
                                  [](auto& x, auto& y) { return x.second < y.second; });
    if (cost < worst->second) *worst = {u, cost};
  }

 private:
  static constexpr std::size_t pop_size = 8;
  const point& tournament() {
    std::uniform_int_distribution<std::size_t> d(0, pop_.size() - 1);
    auto& a = pop_[d(rng_)];
    auto& b = pop_[d(rng_)];
    return a.second <= b.second ? a.first : b.first;
  }
  std::vector<std::pair<point, double>> pop_;
};

}  // namespace

std::vector<std::string> strategy_names() {
  return {"exhaustive", "random", "nelder_mead", "hill_climb", "annealing", "genetic"};
}

std::unique_ptr<strategy> make_strategy(std::string_view name, std::vector<parameter> params,
                                        strategy_options opts) {
  if (name == "exhaustive") return std::make_unique<exhaustive>(std::move(params), opts);
  if (name == "random") return std::make_unique<random_search>(std::move(params), opts);
  if (name == "nelder_mead" || name == "nelder-mead")
    return std::make_unique<nelder_mead>(std::move(params), opts);
  if (name == "hill_climb" || name == "hill-climb")
    return std::make_unique<hill_climb>(std::move(params), opts);
  if (name == "annealing") return std::make_unique<annealing>(std::move(params), opts);
  if (name == "genetic") return std::make_unique<genetic>(std::move(params), opts);
  std::string known;
  for (auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("tuning: unknown strategy '" + std::string(name) +
                              "' (known: " + known + ")");
}

}  // namespace grain::policy::tuning
