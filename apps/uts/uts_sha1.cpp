// grain-uts-sha1: the standard UTS benchmark (SHA-1 splittable random numbers, the published
// sample trees) with one grain task per tree node. The cheap splitmix64 tree stays in
// grain-uts-splitmix; this one is for comparing with other runtimes' published UTS figures, and its
// counts are checked: a sample tree against its published nodes/leaves/depth, any other tree
// against the serial count. Exit 1 on a wrong count, 2 on a bad argument.
//   grain-uts-sha1 [--tree=T1|T3|...|type,shape,b0,d,q,m,r[,gran]] [--gran=G] [--repeat=R]
//                 [--grain:...]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/app_args.hpp"
#include "common/app_main.hpp"
#include "grain/grain.hpp"
#include "kernels/uts_sha1.hpp"

namespace {

namespace uts = bench::uts_std;

uts::counts search(const uts::tree& t, const uts::node& n);

// Named, so traces and launch::adaptive key this task as "uts-std".
struct child_task {
  const uts::tree* t;
  uts::node n;
  uts::counts operator()() const { return search(*t, n); }
};

uts::counts search(const uts::tree& t, const uts::node& n) {
  const int k = t.num_children(n);
  if (k == 0) return uts::leaf_counts(n);
  // k <= 100 except at a binomial root (b0 children): a vector keeps big frames off the stack.
  std::vector<grain::future<uts::counts>> f;
  f.reserve(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i)
    f.push_back(grain::async(grain::annotate("uts-std", child_task{&t, t.child(n, i)})));
  uts::counts c{1, 0, n.height};
  for (auto& x : f) c.add(x.get());
  return c;
}

struct bad_argument {
  std::string arg;
};

long to_long(const std::string& a, const std::string& v) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') throw bad_argument{a};
  return x;
}

struct options {
  std::string tree_name = "T1";
  uts::params p = uts::find_sample("T1")->p;
  int repeat = 1;
};

options parse_args(int argc, char** argv) {
  options o;
  int gran = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    const std::string key = a.substr(0, eq);
    const std::string val = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key == "--tree") {
      const auto p = uts::parse_tree(val);
      if (!p) throw bad_argument{a};
      o.tree_name = val;
      o.p = *p;
    } else if (key == "--gran") {
      gran = static_cast<int>(to_long(a, val));
      if (gran < 1) throw bad_argument{a};
    } else if (key == "--repeat") {
      o.repeat = static_cast<int>(to_long(a, val));
      if (o.repeat < 1) throw bad_argument{a};
    } else {
      throw bad_argument{a};
    }
  }
  if (gran > 0) o.p.gran = gran;
  return o;
}

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  grain::runtime rt(argc, argv);
  options o;
  try {
    o = parse_args(argc, argv);
  } catch (const bad_argument& e) {
    std::fprintf(stderr,
                 "grain-uts-sha1: bad argument '%s'\n"
                 "usage: grain-uts-sha1 [--tree=NAME|type,shape,b0,d,q,m,r[,gran]] [--gran=G] "
                 "[--repeat=R] [--grain:...]\n"
                 "  NAME: %s\n"
                 "  type 0 binomial, 1 geometric, 2 hybrid; shape 0 linear, 1 expdec, 2 cyclic, "
                 "3 fixed\n",
                 e.arg.c_str(), uts::sample_names());
    return 2;
  }
  const uts::tree t(o.p);
  const uts::sample_tree* sample = uts::find_sample(o.tree_name);
  uts::counts expected;
  if (sample)
    expected = {sample->nodes, sample->leaves, sample->depth};
  else
    expected = uts::count_serial(t, t.root());
  grain::counters::reset();  // the counters describe the parallel runs, not the reference
  for (int r = 0; r < o.repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const uts::counts c = grain::async([&t] { return search(t, t.root()); }).get();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const bool ok =
        c.nodes == expected.nodes && c.leaves == expected.leaves && c.depth == expected.depth;
    std::printf(
        "uts-std %s: %ld nodes, %ld leaves, depth %d in %.4f s on %u workers (%.1f ns "
        "per node); %s %s\n",
        o.tree_name.c_str(), c.nodes, c.leaves, c.depth, s, rt.num_workers(),
        1e9 * s / static_cast<double>(c.nodes), ok ? "matches" : "DIFFERS FROM",
        sample ? "the published count" : "the serial count");
    if (!ok) {
      std::fprintf(stderr, "grain-uts-sha1: expected %ld nodes, %ld leaves, depth %d\n",
                   expected.nodes, expected.leaves, expected.depth);
      return 1;
    }
  }
  return 0;
}

// --help (bench::app_main).
constexpr char usage_text[] =
    "usage: grain-uts-sha1 [--tree=T1|T3|...|type,shape,b0,d,q,m,r[,gran]] [--gran=G] "
    "[--repeat=R]\n"
    "                      [--grain:...]\n"
    "The standard UTS benchmark (SHA-1 splittable random numbers), one task per node; the count "
    "is\n"
    "checked against the sample tree's published figures or the serial count.\n"
    "  --tree=T           a published sample tree (T1, T1L, T3, ...) or its parameters (default "
    "T1)\n"
    "  --gran=G           SHA-1 evaluations per node (default: the tree's)\n"
    "  --repeat=R         runs, each timed (default 1)\n";

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, "grain-uts-sha1", usage_text, run_main);
}
