// bench-apps-grain: the Grubel, Lelbach, Kaiser 2016 applications (Alignment, Pyramids, standard
// UTS) on grain: grain::async per pair / per parallel piece / per tree node, future::get to join;
// the computation runs as a task (the main thread only waits), as in bench-grain. Workers:
// --grain:threads=P (or --threads=P, translated to --grain:threads=P).
#include <vector>

#include "common/apps_bench.hpp"
#include "grain/grain.hpp"
#include "grain_command_line.hpp"

namespace {

namespace uts = bench::uts_std;

uts::counts uts_search(const uts::tree& t, const uts::node& n) {
  const int k = t.num_children(n);
  if (k == 0) return uts::leaf_counts(n);
  std::vector<grain::future<uts::counts>> f;
  f.reserve(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i)
    f.push_back(grain::async([&t, c = t.child(n, i)] { return uts_search(t, c); }));
  uts::counts c{1, 0, n.height};
  for (auto& x : f) c.add(x.get());
  return c;
}

struct par {
  template <class A, class B>
  void operator()(A&& a, B&& b) const {
    auto fa = grain::async(a);
    b();
    fa.get();
  }
  template <class A, class B, class C, class D>
  void operator()(A&& a, B&& b, C&& c, D&& d) const {
    auto fa = grain::async(a);
    auto fb = grain::async(b);
    auto fc = grain::async(c);
    d();
    fa.get();
    fb.get();
    fc.get();
  }
};

struct grain_system {
  std::vector<int> alignment(const std::vector<bench::alignment::sequence>& s) const {
    return grain::async([&s] {
             const std::size_t n = s.size();
             std::vector<int> scores(bench::alignment::pair_count(n));
             std::vector<grain::future<void>> f;
             f.reserve(scores.size());
             for (std::size_t i = 0; i < n; ++i)
               for (std::size_t j = i + 1; j < n; ++j)
                 f.push_back(grain::async([&s, &scores, n, i, j] {
                   scores[bench::alignment::pair_index(n, i, j)] =
                       bench::alignment::local_score(s[i], s[j]);
                 }));
             for (auto& x : f) x.get();
             return scores;
           })
        .get();
  }
  void pyramids(bench::pyramids::solver& s, int steps) const {
    grain::async([&s, steps] { s.run(par{}, steps); }).get();
  }
  uts::counts uts(const uts::tree& t) const {
    return grain::async([&t] { return uts_search(t, t.root()); }).get();
  }
};

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  bench::grain_command_line cl(argc, argv);
  const bench::apps::options o = bench::apps::parse(cl.own_argc(), cl.own_argv());
  grain::runtime rt(cl.argc(), cl.argv());
  bench::wake_workers();
  grain_system sys;
  return bench::apps::run_and_report("grain", o, static_cast<int>(rt.num_workers()), sys);
}

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    return grain::fatal_error("bench-apps-grain", e);
  }
}
