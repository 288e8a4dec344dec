#pragma once
// Pyramids (Inncabs): a 2-D Jacobi heat stencil computed by the recursive cache-oblivious
// space-time decomposition (Frigo and Strumpen's trapezoids with the parallel "hyperspace"
// cut of Tang et al., Pochoir): a trapezoid wide enough in both dimensions is cut into four
// upright pieces that run in parallel, then four pieces inverted in one dimension (parallel),
// then the one inverted in both; a narrow one is cut in time; a small one (volume <= cut-off)
// is a base task. Runtime-free and header-only: each system passes its own `par` (a callable
// taking 2 or 4 callables, running them in parallel and joining), so grain-pyramids and the
// bench-apps-* peers run the same decomposition. The result is bitwise that of plain serial
// Jacobi (jacobi_serial): every point is computed by the same expression from the same inputs.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

namespace bench::pyramids {

// One dimension of a trapezoid: at time t it covers [x0 + dx0*(t-t0), x1 + dx1*(t-t0)). The
// slopes are the stencil radius (+-1), or 0 on the fixed domain boundary.
struct dim {
  int x0, dx0, x1, dx1;
  int width_at(int dt) const { return x1 - x0 + (dx1 - dx0) * dt; }
  dim shifted(int s) const { return {x0 + dx0 * s, dx0, x1 + dx1 * s, dx1}; }
};

class grid {
 public:
  // An n x n grid (the outer ring is the fixed boundary) with a deterministic initial field.
  explicit grid(int n) : n_(n), a_(static_cast<std::size_t>(n) * n), b_(a_.size()) {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        // A hot edge and a few hot spots: the field changes everywhere over the steps.
        double v = i == 0 ? 100.0 : 0.0;
        if (((i * 7 + j * 13) % 97) == 0) v = 50.0;
        a_[idx(i, j)] = v;
      }
    b_ = a_;  // the boundary ring is in both time buffers and never written
  }
  int n() const { return n_; }
  // The field after `steps` steps (the buffer the last step wrote).
  const std::vector<double>& after(int steps) const { return (steps & 1) ? b_ : a_; }

  // u(t+1) at (i, j) from u(t): the one expression every schedule uses.
  void point(int t, int i, int j) {
    const double* u = (t & 1) ? b_.data() : a_.data();
    double* v = (t & 1) ? a_.data() : b_.data();
    const std::size_t c = idx(i, j);
    const std::size_t n = static_cast<std::size_t>(n_);
    v[c] = u[c] + 0.125 * (u[c - n] + u[c + n] + u[c - 1] + u[c + 1] - 4.0 * u[c]);
  }
  void row(int t, int i, int j0, int j1) {
    for (int j = j0; j < j1; ++j) point(t, i, j);
  }

 private:
  std::size_t idx(int i, int j) const {
    return static_cast<std::size_t>(i) * static_cast<std::size_t>(n_) + static_cast<std::size_t>(j);
  }
  int n_;
  std::vector<double> a_, b_;
};

// The reference: every step sweeps the whole interior.
inline void jacobi_serial(grid& g, int steps) {
  for (int t = 0; t < steps; ++t)
    for (int i = 1; i < g.n() - 1; ++i) g.row(t, i, 1, g.n() - 1);
}

class solver {
 public:
  // cutoff: the largest trapezoid volume (points x steps) computed as one task.
  solver(grid& g, long cutoff) : g_(g), cutoff_(cutoff < 1 ? 1 : cutoff) {}

  template <class Par>
  void run(const Par& par, int steps) {
    const int n = g_.n();
    walk(par, 0, steps, {1, 0, n - 1, 0}, {1, 0, n - 1, 0});
  }

  // Base tasks run so far (for the average task duration).
  std::uint64_t base_tasks() const { return base_tasks_.load(std::memory_order_relaxed); }

 private:
  static long volume(int dt, const dim& x, const dim& y) {
    const long wx = (x.width_at(0) + x.width_at(dt)) / 2;
    const long wy = (y.width_at(0) + y.width_at(dt)) / 2;
    return static_cast<long>(dt) * wx * wy;
  }

  // Cut in three when the top leaves room for two upright pieces beside the inverted middle.
  static bool cuttable(const dim& d, int dt) { return d.width_at(dt) >= 2 * dt + 2; }

  struct pieces {
    dim left, middle, right;  // left and right first (in parallel), then middle
  };
  static pieces cut(const dim& d, int dt) {
    const int lo = d.x0 + (1 + d.dx0) * dt;  // left's top width >= 0 from here
    const int hi = d.x1 + (d.dx1 - 1) * dt;  // right's top width >= 0 up to here
    const int xm = lo + (hi - lo) / 2;
    return {{d.x0, d.dx0, xm, -1}, {xm, -1, xm, 1}, {xm, 1, d.x1, d.dx1}};
  }

  void base(int t0, int t1, const dim& x, const dim& y) {
    for (int t = t0; t < t1; ++t) {
      const int s = t - t0;
      const int i1 = x.x1 + x.dx1 * s, j0 = y.x0 + y.dx0 * s, j1 = y.x1 + y.dx1 * s;
      for (int i = x.x0 + x.dx0 * s; i < i1; ++i) g_.row(t, i, j0, j1);
    }
    base_tasks_.fetch_add(1, std::memory_order_relaxed);
  }

  template <class Par>
  void walk(const Par& par, int t0, int t1, const dim& x, const dim& y) {
    const int dt = t1 - t0;
    if (dt <= 0 || x.width_at(0) + x.width_at(dt) <= 0 || y.width_at(0) + y.width_at(dt) <= 0)
      return;
    if (volume(dt, x, y) <= cutoff_) return base(t0, t1, x, y);
    const bool cx = cuttable(x, dt), cy = cuttable(y, dt);
    if (cx && cy) {
      const pieces px = cut(x, dt), py = cut(y, dt);
      par([&] { walk(par, t0, t1, px.left, py.left); },
          [&] { walk(par, t0, t1, px.left, py.right); },
          [&] { walk(par, t0, t1, px.right, py.left); },
          [&] { walk(par, t0, t1, px.right, py.right); });
      par([&] { walk(par, t0, t1, px.middle, py.left); },
          [&] { walk(par, t0, t1, px.middle, py.right); },
          [&] { walk(par, t0, t1, px.left, py.middle); },
          [&] { walk(par, t0, t1, px.right, py.middle); });
      walk(par, t0, t1, px.middle, py.middle);
    } else if (cx) {
      const pieces px = cut(x, dt);
      par([&] { walk(par, t0, t1, px.left, y); }, [&] { walk(par, t0, t1, px.right, y); });
      walk(par, t0, t1, px.middle, y);
    } else if (cy) {
      const pieces py = cut(y, dt);
      par([&] { walk(par, t0, t1, x, py.left); }, [&] { walk(par, t0, t1, x, py.right); });
      walk(par, t0, t1, x, py.middle);
    } else if (dt > 1) {
      const int s = dt / 2;
      walk(par, t0, t0 + s, x, y);
      walk(par, t0 + s, t1, x.shifted(s), y.shifted(s));
    } else {
      base(t0, t1, x, y);
    }
  }

  grid& g_;
  long cutoff_;
  std::atomic<std::uint64_t> base_tasks_{0};
};

// Runs the callables one after the other (the serial schedule of the same decomposition).
struct serial_par {
  template <class... F>
  void operator()(F&&... f) const {
    (f(), ...);
  }
};

// Bitwise comparison with the serial reference; the first differing index, or -1.
inline long first_difference(const std::vector<double>& a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) return static_cast<long>(i);
  return a.size() == b.size() ? -1 : static_cast<long>(a.size());
}

}  // namespace bench::pyramids
