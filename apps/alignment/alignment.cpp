// grain-alignment: the BOTS/Inncabs Alignment application on grain — all-pairs protein
// alignment scores (Gotoh affine-gap local alignment, BLOSUM62; apps/bench/kernels/
// alignment.hpp), one grain task per pair, started by a loop as Inncabs does. Input: a FASTA
// protein file, or a deterministic synthetic set. Every score is compared with the serial
// scores (computed before the timed runs; the counters are reset after them). Exit 1 on a
// difference, 2 on a bad argument or input.
//   grain-alignment [--input=FILE.fasta | --sequences=100 --length=300 --seed=1]
//                   [--repeat=R] [--verify=1] [--grain:...]
//   grain-alignment --sequences=N --length=L --seed=S --write-fasta=FILE   (writes the
//                   synthetic set as FASTA and exits: the generator)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/app_args.hpp"
#include "common/app_main.hpp"
#include "grain/grain.hpp"
#include "kernels/alignment.hpp"

namespace {

namespace aln = bench::alignment;
namespace args = bench::args;

struct options {
  std::string input;
  int sequences = 100;
  int length = 300;
  long seed = 1;
  std::string write_fasta;
  int repeat = 1;
  bool verify = true;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const auto a = args::split(argv[i]);
    if (a.key == "--input" && !a.value.empty())
      o.input = a.value;
    else if (a.key == "--sequences")
      o.sequences = static_cast<int>(args::integer(a, 2, 100000));
    else if (a.key == "--length")
      o.length = static_cast<int>(args::integer(a, 1, 1000000));
    else if (a.key == "--seed")
      o.seed = args::integer(a, 0, 1L << 62);
    else if (a.key == "--write-fasta" && !a.value.empty())
      o.write_fasta = a.value;
    else if (a.key == "--repeat")
      o.repeat = static_cast<int>(args::integer(a, 1, 1000));
    else if (a.key == "--verify")
      o.verify = args::integer(a, 0, 1) == 1;
    else
      throw args::bad_argument{a.arg};
  }
  return o;
}

// One task per pair, as the Inncabs loop does; the caller joins them all.
std::vector<int> all_scores(const std::vector<aln::sequence>& s) {
  const std::size_t n = s.size();
  std::vector<int> scores(aln::pair_count(n));
  std::vector<grain::future<void>> f;
  f.reserve(scores.size());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j)
      f.push_back(grain::async(grain::annotate("alignment", [&s, &scores, n, i, j] {
        scores[aln::pair_index(n, i, j)] = aln::local_score(s[i], s[j]);
      })));
  for (auto& x : f) x.get();
  return scores;
}

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  grain::runtime rt(argc, argv);
  options o;
  std::vector<aln::sequence> seqs;
  try {
    o = parse(argc, argv);
    seqs = o.input.empty()
               ? aln::generate(o.sequences, o.length, static_cast<std::uint64_t>(o.seed))
               : aln::read_fasta(o.input);
  } catch (const args::bad_argument& e) {
    std::fprintf(stderr,
                 "grain-alignment: bad argument '%s'\n"
                 "usage: grain-alignment [--input=FILE.fasta | --sequences=100 --length=300 "
                 "--seed=1] [--write-fasta=FILE] [--repeat=R] [--verify=0|1] [--grain:...]\n",
                 e.arg.c_str());
    return 2;
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "grain-alignment: %s\n", e.what());
    return 2;
  }
  if (!o.write_fasta.empty()) {
    std::ofstream out(o.write_fasta);
    aln::write_fasta(out, seqs);
    if (!out.flush()) {
      std::fprintf(stderr, "grain-alignment: cannot write '%s'\n", o.write_fasta.c_str());
      return 2;
    }
    std::printf("wrote %zu sequences (%ld residues) to %s\n", seqs.size(),
                aln::total_residues(seqs), o.write_fasta.c_str());
    return 0;  // the generator: write the set, align nothing
  }
  const std::vector<int> reference = o.verify ? aln::all_scores_serial(seqs) : std::vector<int>{};
  grain::counters::reset();  // the counters describe the parallel runs, not the reference
  for (int r = 0; r < o.repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int> scores = grain::async([&seqs] { return all_scores(seqs); }).get();
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    long sum = 0;
    for (const int x : scores) sum += x;
    const bool ok = !o.verify || scores == reference;
    std::printf(
        "alignment %zu sequences (%ld residues): %zu pairs in %.4f s on %u workers, "
        "score sum %ld; %s\n",
        seqs.size(), aln::total_residues(seqs), scores.size(), sec, rt.num_workers(), sum,
        !o.verify ? "not verified"
        : ok      ? "matches the serial scores"
                  : "DIFFERS FROM the serial scores");
    if (!ok) return 1;
  }
  return 0;
}

// --help (bench::app_main).
constexpr char usage_text[] =
    "usage: grain-alignment [--input=FILE.fasta | --sequences=100 --length=300 --seed=1]\n"
    "                       [--repeat=R] [--verify=1] [--grain:...]\n"
    "       grain-alignment --sequences=N --length=L --seed=S --write-fasta=FILE\n"
    "All-pairs protein alignment scores (Gotoh, BLOSUM62), one task per pair, checked against the\n"
    "serial scores.\n"
    "  --input=FILE       a FASTA protein file (default: a synthetic set)\n"
    "  --sequences=N      synthetic sequences (default 100)\n"
    "  --length=L         their length (default 300)\n"
    "  --seed=S           their seed (default 1)\n"
    "  --repeat=R         timed runs (default 1)\n"
    "  --verify=0|1       compare with the serial scores (default 1)\n"
    "  --write-fasta=FILE write the synthetic set as FASTA and exit\n";

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, "grain-alignment", usage_text, run_main);
}
