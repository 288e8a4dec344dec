// bench-apps-omp-gcc: the Grubel, Lelbach, Kaiser 2016 applications as OpenMP tasks (g++ /
// libgomp): one parallel region of P threads, one thread starts the work in a `single`, every pair
// / parallel piece / tree node an `omp task`, joins are `taskwait`.
#include <omp.h>

#include <vector>

#include "common/apps_bench.hpp"

namespace {

namespace uts = bench::uts_std;

uts::counts uts_search(const uts::tree& t, const uts::node& n) {
  const int k = t.num_children(n);
  if (k == 0) return uts::leaf_counts(n);
  std::vector<uts::counts> r(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) {
#pragma omp task shared(t, r, n) firstprivate(i)
    r[static_cast<std::size_t>(i)] = uts_search(t, t.child(n, i));
  }
#pragma omp taskwait
  uts::counts c{1, 0, n.height};
  for (const auto& x : r) c.add(x);
  return c;
}

struct par {
  template <class A, class B>
  void operator()(A&& a, B&& b) const {
#pragma omp task shared(a)
    a();
    b();
#pragma omp taskwait
  }
  template <class A, class B, class C, class D>
  void operator()(A&& a, B&& b, C&& c, D&& d) const {
#pragma omp task shared(a)
    a();
#pragma omp task shared(b)
    b();
#pragma omp task shared(c)
    c();
    d();
#pragma omp taskwait
  }
};

// Runs f in one thread of a team of `threads`, the others executing the tasks it creates.
template <class F>
void in_team(int threads, F&& f) {
#pragma omp parallel num_threads(threads)
  {
#pragma omp single
    f();
  }
}

struct omp_system {
  int threads;
  std::vector<int> alignment(const std::vector<bench::alignment::sequence>& s) const {
    const std::size_t n = s.size();
    std::vector<int> scores(bench::alignment::pair_count(n));
    in_team(threads, [&] {
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) {
#pragma omp task shared(s, scores) firstprivate(i, j)
          scores[bench::alignment::pair_index(n, i, j)] = bench::alignment::local_score(s[i], s[j]);
        }
#pragma omp taskwait
    });
    return scores;
  }
  void pyramids(bench::pyramids::solver& s, int steps) const {
    in_team(threads, [&] { s.run(par{}, steps); });
  }
  uts::counts uts(const uts::tree& t) const {
    uts::counts c;
    in_team(threads, [&] { c = uts_search(t, t.root()); });
    return c;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const bench::apps::options o = bench::apps::parse(argc, argv);
  omp_set_dynamic(0);
  int team = 0;
#pragma omp parallel num_threads(o.threads)
  {
#pragma omp single
    team = omp_get_num_threads();
  }
  omp_system sys{o.threads};
  return bench::apps::run_and_report("omp-gcc", o, team, sys);
}
