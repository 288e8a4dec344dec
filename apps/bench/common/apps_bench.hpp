#pragma once
// Shared by the bench-apps-<system> executables (apps/bench): the Grubel, Lelbach, Kaiser 2016
// applications (Alignment, Pyramids, standard UTS; kernels/) as benchmarks for grain and its peers.
// Each system supplies how it runs the three (a struct with alignment(), pyramids(), uts()); this
// header parses the command line, prepares the input, times the run and prints one JSON line.
// Runtime-free, so the OpenMP and TBB executables use it as they are.
//
// Command line (every executable):
//   --app=alignment|pyramids|uts  --threads=P  --warmup=W
//   alignment: --sequences=100 --length=300 --seed=1      (a synthetic set; or --input=FASTA)
//   pyramids:  --n=1024 --steps=512 --cutoff=262144
//   uts:       --tree=T1 (a published tree or type,shape,b0,d,q,m,r[,gran]) --gran=G
// Output: {"system":..,"bench":APP,"threads":..,"time_s":..,"tasks":..,"result":..,
//          "input":"..","max_rss_kb":..}
// result: alignment the sum of all scores, pyramids a hash of the final field's bits, uts the
// node count; equal results across systems mean equal computations.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/app_args.hpp"
#include "common/bench_common.hpp"
#include "kernels/alignment.hpp"
#include "kernels/pyramids.hpp"
#include "kernels/uts_sha1.hpp"

namespace bench::apps {

struct options {
  std::string app = "uts";
  int threads = 1;
  int warmup = 0;
  std::string input;  // alignment: FASTA file instead of the synthetic set
  int sequences = 100, length = 300;
  long seed = 1;
  int n = 1024, steps = 512;
  long cutoff = 262144;
  std::string tree = "T1";
  int gran = 0;  // 0: the tree's own
};

[[noreturn]] inline void usage(const char* prog, const std::string& bad) {
  std::fprintf(stderr,
               "%s: bad argument '%s'\n"
               "usage: %s --app=alignment|pyramids|uts [--threads=P] [--warmup=W]\n"
               "  alignment: [--sequences=100] [--length=300] [--seed=1] | [--input=FILE.fasta]\n"
               "  pyramids:  [--n=1024] [--steps=512] [--cutoff=262144]\n"
               "  uts:       [--tree=T1|%s|type,shape,b0,d,q,m,r[,gran]] [--gran=G]\n",
               prog, bad.c_str(), prog, bench::uts_std::sample_names());
  std::exit(2);
}

inline options parse(int argc, char** argv) {
  options o;
  const char* prog = argc > 0 ? argv[0] : "bench-apps";
  try {
    for (int i = 1; i < argc; ++i) {
      const auto a = args::split(argv[i]);
      if (a.key == "--app") {
        o.app = a.value;
        if (o.app != "alignment" && o.app != "pyramids" && o.app != "uts") usage(prog, a.arg);
      } else if (a.key == "--threads") {
        o.threads = static_cast<int>(args::integer(a, 1, 4096));
      } else if (a.key == "--warmup") {
        o.warmup = static_cast<int>(args::integer(a, 0, 1000));
      } else if (a.key == "--input" && !a.value.empty()) {
        o.input = a.value;
      } else if (a.key == "--sequences") {
        o.sequences = static_cast<int>(args::integer(a, 2, 100000));
      } else if (a.key == "--length") {
        o.length = static_cast<int>(args::integer(a, 1, 1000000));
      } else if (a.key == "--seed") {
        o.seed = args::integer(a, 0, 1L << 62);
      } else if (a.key == "--n") {
        o.n = static_cast<int>(args::integer(a, 3, 32768));
      } else if (a.key == "--steps") {
        o.steps = static_cast<int>(args::integer(a, 1, 1 << 20));
      } else if (a.key == "--cutoff") {
        o.cutoff = args::integer(a, 1, 1L << 40);
      } else if (a.key == "--tree") {
        if (!uts_std::parse_tree(a.value)) usage(prog, a.arg);
        o.tree = a.value;
      } else if (a.key == "--gran") {
        o.gran = static_cast<int>(args::integer(a, 1, 1000000));
      } else {
        usage(prog, a.arg);
      }
    }
  } catch (const args::bad_argument& e) {
    usage(prog, e.arg);
  }
  return o;
}

// The prepared input of one application; run() computes its result.
struct problem {
  options o;
  std::vector<alignment::sequence> seqs;
  uts_std::params tree_params;
  std::string input;  // a one-line description for the JSON line
  long tasks = 0;     // tasks of the last run

  explicit problem(const options& opt) : o(opt) {
    char buf[160];
    if (o.app == "alignment") {
      try {
        seqs = o.input.empty()
                   ? alignment::generate(o.sequences, o.length, static_cast<std::uint64_t>(o.seed))
                   : alignment::read_fasta(o.input);
      } catch (const std::runtime_error& e) {
        std::fprintf(stderr, "bench-apps: %s\n", e.what());
        std::exit(2);
      }
      std::snprintf(buf, sizeof buf, "%zu sequences, %ld residues", seqs.size(),
                    alignment::total_residues(seqs));
    } else if (o.app == "pyramids") {
      std::snprintf(buf, sizeof buf, "n=%d steps=%d cutoff=%ld", o.n, o.steps, o.cutoff);
    } else {
      tree_params = *uts_std::parse_tree(o.tree);
      if (o.gran > 0) tree_params.gran = o.gran;
      std::snprintf(buf, sizeof buf, "tree %s gran %d", o.tree.c_str(), tree_params.gran);
    }
    input = buf;
  }

  template <class System>
  long run(System& sys) {
    if (o.app == "alignment") {
      const std::vector<int> scores = sys.alignment(seqs);
      tasks = static_cast<long>(scores.size());
      long sum = 0;
      for (const int x : scores) sum += x;
      return sum;
    }
    if (o.app == "pyramids") {
      pyramids::grid g(o.n);
      pyramids::solver s(g, o.cutoff);
      sys.pyramids(s, o.steps);
      tasks = static_cast<long>(s.base_tasks());
      return field_hash(g.after(o.steps));
    }
    const uts_std::tree t(tree_params);
    const uts_std::counts c = sys.uts(t);
    tasks = c.nodes - 1;
    return c.nodes;
  }

  // FNV-1a over the field's bits (non-negative, so it prints as a JSON integer).
  static long field_hash(const std::vector<double>& v) {
    std::uint64_t h = 1469598103934665603ULL;
    for (const double x : v) {
      std::uint64_t b = 0;
      std::memcpy(&b, &x, sizeof b);
      h = (h ^ b) * 1099511628211ULL;
    }
    return static_cast<long>(h >> 1);
  }
};

// Runs the application warmup+1 times, times the last, prints the JSON line.
template <class System>
int run_and_report(const char* system, const options& o, int threads, System& sys) {
  problem p(o);
  for (int w = 0; w < o.warmup; ++w) (void)p.run(sys);
  const auto t0 = std::chrono::steady_clock::now();
  const long result = p.run(sys);
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "{\"system\":\"%s\",\"bench\":\"%s\",\"threads\":%d,\"time_s\":%.6f,\"tasks\":%ld,"
      "\"result\":%ld,\"input\":\"%s\",\"max_rss_kb\":%ld}\n",
      system, o.app.c_str(), threads, t, p.tasks, result, p.input.c_str(), bench::max_rss_kb());
  std::fflush(stdout);
  return 0;
}

// The serial versions: the reference every system's result must equal.
struct serial_system {
  std::vector<int> alignment(const std::vector<bench::alignment::sequence>& s) const {
    return bench::alignment::all_scores_serial(s);
  }
  void pyramids(bench::pyramids::solver& s, int steps) const {
    s.run(bench::pyramids::serial_par{}, steps);
  }
  uts_std::counts uts(const uts_std::tree& t) const { return uts_std::count_serial(t, t.root()); }
};

}  // namespace bench::apps
