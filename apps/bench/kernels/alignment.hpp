#pragma once
// Alignment (BOTS / Inncabs): all-pairs protein sequence alignment, one task per pair. The
// score of a pair is the Gotoh affine-gap local alignment score (Smith-Waterman with affine
// gaps) with BLOSUM62 and BLAST's default gap costs (a gap of k residues costs 11 + k),
// computed in linear space (the forward pass of Myers and Miller). Also here: a FASTA reader
// and writer, and a generator of deterministic synthetic protein sets (log-normal lengths,
// the Robinson and Robinson background amino-acid frequencies), so tests and benchmarks need
// no download. Runtime-free and header-only: grain-alignment and the bench-apps-* peers share
// it.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench::alignment {

inline constexpr char residues[] = "ARNDCQEGHILKMFPSTWYV";
inline constexpr int n_residues = 20;

// BLOSUM62 in the order of `residues`.
inline constexpr std::array<std::array<int, n_residues>, n_residues> blosum62 = {{
    {4, -1, -2, -2, 0, -1, -1, 0, -2, -1, -1, -1, -1, -2, -1, 1, 0, -3, -2, 0},
    {-1, 5, 0, -2, -3, 1, 0, -2, 0, -3, -2, 2, -1, -3, -2, -1, -1, -3, -2, -3},
    {-2, 0, 6, 1, -3, 0, 0, 0, 1, -3, -3, 0, -2, -3, -2, 1, 0, -4, -2, -3},
    {-2, -2, 1, 6, -3, 0, 2, -1, -1, -3, -4, -1, -3, -3, -1, 0, -1, -4, -3, -3},
    {0, -3, -3, -3, 9, -3, -4, -3, -3, -1, -1, -3, -1, -2, -3, -1, -1, -2, -2, -1},
    {-1, 1, 0, 0, -3, 5, 2, -2, 0, -3, -2, 1, 0, -3, -1, 0, -1, -2, -1, -2},
    {-1, 0, 0, 2, -4, 2, 5, -2, 0, -3, -3, 1, -2, -3, -1, 0, -1, -3, -2, -2},
    {0, -2, 0, -1, -3, -2, -2, 6, -2, -4, -4, -2, -3, -3, -2, 0, -2, -2, -3, -3},
    {-2, 0, 1, -1, -3, 0, 0, -2, 8, -3, -3, -1, -2, -1, -2, -1, -2, -2, 2, -3},
    {-1, -3, -3, -3, -1, -3, -3, -4, -3, 4, 2, -3, 1, 0, -3, -2, -1, -3, -1, 3},
    {-1, -2, -3, -4, -1, -2, -3, -4, -3, 2, 4, -2, 2, 0, -3, -2, -1, -2, -1, 1},
    {-1, 2, 0, -1, -3, 1, 1, -2, -1, -3, -2, 5, -1, -3, -1, 0, -1, -3, -2, -2},
    {-1, -1, -2, -3, -1, 0, -2, -3, -2, 1, 2, -1, 5, 0, -2, -1, -1, -1, -1, 1},
    {-2, -3, -3, -3, -2, -3, -3, -3, -1, 0, 0, -3, 0, 6, -4, -2, -2, 1, 3, -1},
    {-1, -2, -2, -1, -3, -1, -1, -2, -2, -3, -3, -1, -2, -4, 7, -1, -1, -4, -3, -2},
    {1, -1, 1, 0, -1, 0, 0, 0, -1, -2, -2, 0, -1, -2, -1, 4, 1, -3, -2, -2},
    {0, -1, 0, -1, -1, -1, -1, -2, -2, -1, -1, -1, -1, -2, -1, 1, 5, -2, -2, 0},
    {-3, -3, -4, -4, -2, -2, -3, -2, -2, -3, -2, -3, -1, 1, -4, -3, -2, 11, 2, -3},
    {-2, -2, -2, -3, -2, -1, -2, -3, 2, -1, -1, -2, -1, 3, -3, -2, -2, 2, 7, -1},
    {0, -3, -3, -3, -1, -2, -2, -3, -3, 3, 1, -2, 1, -1, -2, -2, 0, -3, -1, 4},
}};

inline constexpr int gap_open = 11;   // BLAST's defaults for BLOSUM62
inline constexpr int gap_extend = 1;  // a gap of k residues costs gap_open + k * gap_extend

// A sequence as residue indices (0..19) with its name.
struct sequence {
  std::string name;
  std::vector<std::uint8_t> res;
};

// Residue index of a letter (either case), or -1.
inline int residue_index(char c) {
  if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  for (int i = 0; i < n_residues; ++i)
    if (residues[i] == c) return i;
  return -1;
}

// The best local alignment score of a and b (Gotoh's recurrences, one row of H and F).
inline int local_score(const sequence& a, const sequence& b) {
  const std::size_t m = b.res.size();
  std::vector<int> h(m + 1, 0), f(m + 1, 0);
  const int first = gap_open + gap_extend;
  int best = 0;
  for (const std::uint8_t ai : a.res) {
    const auto& row = blosum62[ai];
    int diag = 0;  // H[i-1][j-1]
    int e = 0;     // E[i][j-1]: best ending in a gap in a
    int left = 0;  // H[i][j-1]
    for (std::size_t j = 1; j <= m; ++j) {
      e = std::max(e - gap_extend, left - first);
      f[j] = std::max(f[j] - gap_extend, h[j] - first);
      const int hij = std::max({0, diag + row[b.res[j - 1]], e, f[j]});
      diag = h[j];
      h[j] = hij;
      left = hij;
      best = std::max(best, hij);
    }
  }
  return best;
}

// The pairs (i, j), i < j, in the order the loop visits them; a pair's score goes to
// scores[pair_index(n, i, j)].
inline std::size_t pair_count(std::size_t n) {
  return n * (n - 1) / 2;
}
inline std::size_t pair_index(std::size_t n, std::size_t i, std::size_t j) {
  return i * n - i * (i + 1) / 2 + (j - i - 1);
}

inline std::vector<int> all_scores_serial(const std::vector<sequence>& s) {
  std::vector<int> scores(pair_count(s.size()));
  for (std::size_t i = 0; i < s.size(); ++i)
    for (std::size_t j = i + 1; j < s.size(); ++j)
      scores[pair_index(s.size(), i, j)] = local_score(s[i], s[j]);
  return scores;
}

// --- synthetic protein sets -------------------------------------------------------------------

// splitmix64: a small, exactly reproducible generator (std's distributions are not portable).
class rng {
 public:
  explicit rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {                                                           // Box-Muller
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  std::uint64_t s_;
};

// Background frequencies of `residues` in real proteins (Robinson and Robinson, PNAS 1991).
inline constexpr std::array<double, n_residues> background = {
    0.07805, 0.05129, 0.04487, 0.05364, 0.01925, 0.04264, 0.06295, 0.07377, 0.02199, 0.05142,
    0.09019, 0.05744, 0.02243, 0.03856, 0.05203, 0.07120, 0.05841, 0.01330, 0.03216, 0.06441};

// `count` sequences, lengths log-normal around `median` (sigma 0.5, as protein lengths are),
// within [median/5, 5*median]; the same (count, median, seed) always gives the same set.
inline std::vector<sequence> generate(int count, int median, std::uint64_t seed) {
  std::array<double, n_residues> cdf{};
  double sum = 0;
  for (int i = 0; i < n_residues; ++i)
    cdf[static_cast<std::size_t>(i)] = sum += background[static_cast<std::size_t>(i)];
  rng r(seed);
  std::vector<sequence> out(static_cast<std::size_t>(count));
  for (int k = 0; k < count; ++k) {
    auto& s = out[static_cast<std::size_t>(k)];
    s.name = "synthetic_" + std::to_string(k + 1);
    const double len =
        std::clamp(median * std::exp(0.5 * r.normal()), std::max(1.0, median / 5.0), 5.0 * median);
    s.res.resize(static_cast<std::size_t>(std::lround(len)));
    for (auto& x : s.res) {
      const double u = r.uniform() * sum;
      x = static_cast<std::uint8_t>(std::upper_bound(cdf.begin(), cdf.end() - 1, u) - cdf.begin());
    }
  }
  return out;
}

// --- FASTA ------------------------------------------------------------------------------------

// Reads a FASTA protein file; throws std::runtime_error naming the line of anything else.
inline std::vector<sequence> read_fasta(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open '" + path + "'");
  std::vector<sequence> out;
  std::string line;
  long lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == ';') continue;
    if (line[0] == '>') {
      out.push_back({line.substr(1), {}});
      continue;
    }
    if (out.empty())
      throw std::runtime_error(path + ":" + std::to_string(lineno) +
                               ": sequence data before the first '>' header");
    for (const char c : line) {
      if (c == ' ' || c == '\t' || c == '*') continue;
      const int r = residue_index(c);
      if (r < 0) {
        std::ostringstream m;
        m << path << ":" << lineno << ": '" << c << "' is not one of the 20 standard amino acids ("
          << residues << ")";
        throw std::runtime_error(m.str());
      }
      out.back().res.push_back(static_cast<std::uint8_t>(r));
    }
  }
  if (out.size() < 2) throw std::runtime_error(path + ": fewer than two sequences");
  for (const auto& s : out)
    if (s.res.empty()) throw std::runtime_error(path + ": sequence '" + s.name + "' is empty");
  return out;
}

inline void write_fasta(std::ostream& out, const std::vector<sequence>& s) {
  for (const auto& q : s) {
    out << '>' << q.name << '\n';
    for (std::size_t i = 0; i < q.res.size(); ++i) {
      out << residues[q.res[i]];
      if (i % 60 == 59 || i + 1 == q.res.size()) out << '\n';
    }
  }
}

inline long total_residues(const std::vector<sequence>& s) {
  long n = 0;
  for (const auto& q : s) n += static_cast<long>(q.res.size());
  return n;
}

}  // namespace bench::alignment
