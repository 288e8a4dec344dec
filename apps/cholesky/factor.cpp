// The Cholesky task graph (factor.hpp).
#include "factor.hpp"

#include "tile_kernels.hpp"

namespace cholesky {

namespace {

using tile_future = grain::shared_future<void>;

// Each task first takes its inputs' values, so an error upstream (a tile not SPD) reaches the
// final futures instead of being computed on.
template <class... F>
void take(F&... in) {
  (in.get(), ...);
}

struct potrf_task {
  tiled_matrix* m;
  int k;
  void operator()(tile_future akk) const {
    take(akk);
    potrf(m->tile(k, k), m->rows(k));
  }
};

struct trsm_task {
  tiled_matrix* m;
  int i, k;
  void operator()(tile_future lkk, tile_future aik) const {
    take(lkk, aik);
    trsm(m->tile(k, k), m->rows(k), m->tile(i, k), m->rows(i));
  }
};

struct syrk_task {
  tiled_matrix* m;
  int i, k;
  void operator()(tile_future aik, tile_future aii) const {
    take(aik, aii);
    syrk(m->tile(i, k), m->rows(i), m->rows(k), m->tile(i, i));
  }
};

struct gemm_task {
  tiled_matrix* m;
  int i, j, k;
  void operator()(tile_future aik, tile_future ajk, tile_future aij) const {
    take(aik, ajk, aij);
    gemm(m->tile(i, k), m->rows(i), m->tile(j, k), m->rows(j), m->rows(k), m->tile(i, j));
  }
};

}  // namespace

void factor(tiled_matrix& m, const critical::routing& route) {
  const int nt = m.tiles();
  std::vector<tile_future> f(static_cast<std::size_t>(nt) * nt);
  auto at = [&](int i, int j) -> tile_future& { return f[static_cast<std::size_t>(i) * nt + j]; };
  for (int i = 0; i < nt; ++i)
    for (int j = 0; j <= i; ++j) at(i, j) = grain::make_ready_future();
  const grain::executor& ex_potrf = route.executor_for("potrf");
  const grain::executor& ex_trsm = route.executor_for("trsm");
  const grain::executor& ex_syrk = route.executor_for("syrk");
  const grain::executor& ex_gemm = route.executor_for("gemm");
  for (int k = 0; k < nt; ++k) {
    at(k, k) = grain::dataflow(ex_potrf, grain::annotate("potrf", potrf_task{&m, k}), at(k, k));
    for (int i = k + 1; i < nt; ++i)
      at(i, k) = grain::dataflow(ex_trsm, grain::annotate("trsm", trsm_task{&m, i, k}), at(k, k),
                                 at(i, k));
    for (int i = k + 1; i < nt; ++i) {
      at(i, i) = grain::dataflow(ex_syrk, grain::annotate("syrk", syrk_task{&m, i, k}), at(i, k),
                                 at(i, i));
      for (int j = k + 1; j < i; ++j)
        at(i, j) = grain::dataflow(ex_gemm, grain::annotate("gemm", gemm_task{&m, i, j, k}),
                                   at(i, k), at(j, k), at(i, j));
    }
  }
  for (int i = 0; i < nt; ++i)
    for (int j = 0; j <= i; ++j) at(i, j).get();
}

double flops(int n) {
  const double d = n;
  return d * d * d / 3.0;
}

}  // namespace cholesky
