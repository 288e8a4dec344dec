// grain-uts-splitmix: Unbalanced Tree Search with one task per tree node, then a report of what the
// runtime did. The tree is apps/bench's T1-like geometric tree (b0 = 4, depth limit 10,
// 3,900,141 nodes for seed 137); --gran sets the work per node in splitmix64 rounds (UTS -g).
// The default, 10 rounds (tens of ns), makes the tasks fine-grained: the task-overhead case
// that launch::adaptive is for (docs/inlining.md).
//   grain-uts-splitmix [--depth=10] [--b0=4] [--seed=137] [--gran=10] [--repeat=R]
//             [--policy=async|fork|sync|adaptive] [--grain:...]
// Without --policy the children use grain::async's default (--grain:inline=adaptive|async).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "common/app_args.hpp"
#include "common/app_main.hpp"
#include "common/bench_common.hpp"
#include "grain/detail/task_overhead.hpp"
#include "grain/grain.hpp"

namespace {

std::optional<grain::launch> policy;  // empty: grain::async's default policy

long uts(const bench::uts_params& P, const bench::uts_node& nd);

// Named, so launch::adaptive keys its estimates by "uts" (and the tree depth it runs at).
struct uts_child {
  const bench::uts_params* P;
  bench::uts_node node;
  long operator()() const { return uts(*P, node); }
};

long uts(const bench::uts_params& P, const bench::uts_node& nd) {
  const int k = P.num_children(nd);
  if (k == 0) return 1;
  bench::child_slots<grain::future<long>> f(k);
  for (int i = 0; i < k; ++i) {
    auto task = grain::annotate("uts", uts_child{&P, bench::uts_params::child(nd, i)});
    f[i] = policy ? grain::async(*policy, task) : grain::async(task);
  }
  long count = 1;
  for (int i = 0; i < k; ++i) count += f[i].get();
  return count;
}

// A bad argument: main prints the usage and returns 2 (std::exit would skip stopping the
// runtime, whose workers still run).
struct bad_argument {
  std::string arg;
};

[[noreturn]] void usage(const char* bad) {
  throw bad_argument{bad};
}

long to_long(const std::string& a, const std::string& v) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') usage(a.c_str());
  return x;
}

grain::launch parse_policy(const std::string& a, const std::string& p) {
  const auto l = grain::launch_from_name(p);
  if (!l || *l == grain::launch::deferred) usage(a.c_str());
  return *l;
}

void parse_args(int argc, char** argv, bench::options& o, int& repeat) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    const std::string key = a.substr(0, eq);
    const std::string val = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key == "--depth") {
      o.uts_depth = static_cast<int>(to_long(a, val));
      if (o.uts_depth < 0) usage(a.c_str());
    } else if (key == "--b0") {
      o.uts_b0 = std::strtod(val.c_str(), nullptr);
      if (!(o.uts_b0 > 0)) usage(a.c_str());
    } else if (key == "--seed") {
      o.uts_seed = static_cast<std::uint64_t>(to_long(a, val));
    } else if (key == "--gran") {
      o.uts_gran = static_cast<int>(to_long(a, val));
      if (o.uts_gran < 0) usage(a.c_str());
    } else if (key == "--repeat") {
      repeat = static_cast<int>(to_long(a, val));
      if (repeat < 1) usage(a.c_str());
    } else if (key == "--policy") {
      policy = parse_policy(a, val);
    } else {
      usage(a.c_str());
    }
  }
}

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  grain::runtime rt(argc, argv);
  bench::options o;
  o.uts_gran = 10;
  int repeat = 1;
  try {
    parse_args(argc, argv, o, repeat);
  } catch (const bad_argument& e) {
    std::fprintf(
        stderr,
        "grain-uts-splitmix: bad argument '%s'\n"
        "usage: grain-uts-splitmix [--depth=10] [--b0=4] [--seed=137] [--gran=10] [--repeat=R]\n"
        "                 [--policy=async|fork|sync|adaptive] [--grain:...]\n",
        e.arg.c_str());
    return 2;
  }
  const bench::uts_params P(o);
  const long expected = bench::uts_serial(P, P.root());
  const grain::launch used = policy ? *policy : grain::detail::default_policy();
  const grain::knob& lambda_knob = grain::knobs().at("inline.lambda");
  std::uint64_t tasks0 = 0, inlined0 = 0, stolen0 = 0;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const long nodes = grain::async([&P] { return uts(P, P.root()); }).get();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (nodes != expected) {
      std::fprintf(stderr, "grain-uts-splitmix: wrong node count %ld (serial: %ld)\n", nodes,
                   expected);
      return 1;
    }
    std::uint64_t tasks = 0, inlined = 0, stolen = 0;
    for (unsigned w = 0; w < rt.num_workers(); ++w) {
      auto& st = rt.core().stats(w);
      tasks += st.tasks.get();
      inlined += st.inline_tasks.get();
      stolen += st.stolen_to.get();
    }
    std::printf(
        "uts(b0=%g, depth=%d, seed=%llu, gran=%d) = %ld nodes in %.4f s on %u workers: %llu "
        "tasks (%llu run inline, %llu stolen); policy %s, inline.lambda %g, t_o %.1f ns\n",
        o.uts_b0, o.uts_depth, static_cast<unsigned long long>(o.uts_seed), o.uts_gran, nodes, s,
        rt.num_workers(), static_cast<unsigned long long>(tasks - tasks0),
        static_cast<unsigned long long>(inlined - inlined0),
        static_cast<unsigned long long>(stolen - stolen0), grain::launch_name(used),
        lambda_knob.value(), grain::detail::task_overhead_ns());
    tasks0 = tasks;
    inlined0 = inlined;
    stolen0 = stolen;
  }
  return 0;
}

// --help (bench::app_main).
constexpr char usage_text[] =
    "usage: grain-uts-splitmix [--depth=10] [--b0=4] [--seed=137] [--gran=10] [--repeat=R]\n"
    "                          [--policy=async|fork|sync|adaptive] [--grain:...]\n"
    "Unbalanced tree search on a geometric tree of splitmix64 numbers, one task per node.\n"
    "  --depth=D          depth limit of the tree (default 10: 3,900,141 nodes for seed 137)\n"
    "  --b0=B             expected children per node (default 4)\n"
    "  --seed=S           the root's seed (default 137)\n"
    "  --gran=G           splitmix64 rounds of work per node (default 10)\n"
    "  --repeat=R         runs, each timed (default 1)\n"
    "  --policy=P         how the children are launched (default: grain::async's default)\n";

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, "grain-uts-splitmix", usage_text, run_main);
}
