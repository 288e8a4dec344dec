// bench-apps-tbb: the Grubel, Lelbach, Kaiser 2016 applications on oneTBB in a task_arena of P
// threads: task_group::run per pair and per tree node, parallel_invoke for Pyramids' parallel
// pieces.
#include <tbb/global_control.h>
#include <tbb/parallel_invoke.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <vector>

#include "common/apps_bench.hpp"

namespace {

namespace uts = bench::uts_std;

uts::counts uts_search(const uts::tree& t, const uts::node& n) {
  const int k = t.num_children(n);
  if (k == 0) return uts::leaf_counts(n);
  std::vector<uts::counts> r(static_cast<std::size_t>(k));
  tbb::task_group g;
  for (int i = 0; i < k; ++i)
    g.run([&t, &r, &n, i] { r[static_cast<std::size_t>(i)] = uts_search(t, t.child(n, i)); });
  g.wait();
  uts::counts c{1, 0, n.height};
  for (const auto& x : r) c.add(x);
  return c;
}

struct par {
  template <class... F>
  void operator()(F&&... f) const {
    tbb::parallel_invoke(f...);
  }
};

struct tbb_system {
  tbb::task_arena* arena;
  std::vector<int> alignment(const std::vector<bench::alignment::sequence>& s) const {
    const std::size_t n = s.size();
    std::vector<int> scores(bench::alignment::pair_count(n));
    arena->execute([&] {
      tbb::task_group g;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j)
          g.run([&s, &scores, n, i, j] {
            scores[bench::alignment::pair_index(n, i, j)] =
                bench::alignment::local_score(s[i], s[j]);
          });
      g.wait();
    });
    return scores;
  }
  void pyramids(bench::pyramids::solver& s, int steps) const {
    arena->execute([&] { s.run(par{}, steps); });
  }
  uts::counts uts(const uts::tree& t) const {
    return arena->execute([&] { return uts_search(t, t.root()); });
  }
};

}  // namespace

int main(int argc, char** argv) {
  const bench::apps::options o = bench::apps::parse(argc, argv);
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                         static_cast<std::size_t>(o.threads));
  tbb::task_arena arena(o.threads);
  arena.initialize();
  arena.execute([] {  // start the workers before timing
    tbb::task_group g;
    for (int i = 0; i < 64; ++i) g.run([] {});
    g.wait();
  });
  tbb_system sys{&arena};
  return bench::apps::run_and_report("tbb", o, o.threads, sys);
}
