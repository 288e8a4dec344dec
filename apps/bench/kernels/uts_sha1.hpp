#pragma once
// The standard UTS tree (Olivier et al., "UTS: An Unbalanced Tree Search Benchmark", LCPC 2006)
// with its SHA-1 splittable random numbers, so node counts match the published sample trees
// (T1 4,130,071, T3 4,112,897, ...). SHA-1 comes from nettle (a Debian library), not a copy.
// Runtime-free and header-only: grain-uts-sha1 and the bench-apps-* peers share this one tree.
//
// A node's state is 20 bytes: the root's is SHA-1(16 zero bytes, seed as 4 big-endian bytes),
// child i's is SHA-1(parent state, i as 4 big-endian bytes); a node's random number is bytes
// 16..19 big-endian, masked to 31 bits, divided by 2^31. Shapes: binomial (root: b0 children,
// others: m children with probability q), geometric (children ~ geometric with mean b_i, b_i
// from the depth by the shape function), hybrid (geometric above shift*depth, binomial below).
#include <nettle/sha1.h>
#include <nettle/version.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace bench::uts_std {

enum class tree_type { binomial = 0, geometric = 1, hybrid = 2 };
enum class geo_shape { linear = 0, expdec = 1, cyclic = 2, fixed = 3 };

inline constexpr int max_children = 100;  // UTS's MAXNUMCHILDREN (not for a binomial root)

struct params {
  tree_type type = tree_type::geometric;
  geo_shape shape = geo_shape::fixed;
  double b0 = 4;       // -b: root branching factor (geometric: expected children)
  int gen_mx = 10;     // -d: depth limit of the geometric shape
  double q = 0.15625;  // -q: binomial probability of a non-leaf
  int m = 4;           // -m: binomial number of children of a non-leaf
  int root_seed = 19;  // -r
  double shift = 0.5;  // -f: hybrid switch depth as a fraction of gen_mx
  int gran = 1;        // -g: SHA-1 evaluations per child (the work; the tree is the same)
};

// A published tree: its parameters and its node count, leaves and depth.
struct sample_tree {
  const char* name;
  params p;
  long nodes;
  long leaves;
  int depth;
};

// From the UTS distribution's sample_trees.sh (T1..T5, T1L, T3L) and the small trees of the
// UTS ports' reference tables (test-t1 ... small-t3), which keep T1's and T3's seeds.
inline const sample_tree* find_sample(std::string_view name) {
  using T = tree_type;
  using S = geo_shape;
  static const sample_tree trees[] = {
      {"T1", {T::geometric, S::fixed, 4, 10, 0.15625, 4, 19, 0.5, 1}, 4130071, 3305118, 10},
      {"T5", {T::geometric, S::linear, 4, 20, 0.15625, 4, 34, 0.5, 1}, 4147582, 2181318, 20},
      {"T2", {T::geometric, S::cyclic, 6, 16, 0.15625, 4, 502, 0.5, 1}, 4117769, 2342762, 81},
      {"T3", {T::binomial, S::linear, 2000, 6, 0.124875, 8, 42, 0.5, 1}, 4112897, 3599034, 1572},
      {"T4", {T::hybrid, S::linear, 6, 16, 0.234375, 4, 1, 0.5, 1}, 4132453, 3108986, 134},
      {"T1L", {T::geometric, S::fixed, 4, 13, 0.15625, 4, 29, 0.5, 1}, 102181082, 81746377, 13},
      {"T3L",
       {T::binomial, S::linear, 2000, 6, 0.200014, 5, 7, 0.5, 1},
       111345631,
       89076904,
       17844},
      {"test-t1", {T::geometric, S::fixed, 4, 3, 0.15625, 4, 19, 0.5, 1}, 254, 201, 3},
      {"tiny-t1", {T::geometric, S::fixed, 4, 4, 0.15625, 4, 19, 0.5, 1}, 944, 744, 4},
      {"small-t1", {T::geometric, S::fixed, 4, 5, 0.15625, 4, 19, 0.5, 1}, 3987, 3232, 5},
      {"test-t3", {T::binomial, S::linear, 10, 6, 0.12, 8, 42, 0.5, 1}, 371, 325, 15},
      {"tiny-t3", {T::binomial, S::linear, 50, 6, 0.12, 8, 42, 0.5, 1}, 723, 638, 17},
      {"small-t3", {T::binomial, S::linear, 200, 6, 0.12, 8, 42, 0.5, 1}, 4649, 4092, 62},
  };
  for (const auto& t : trees)
    if (name == t.name) return &t;
  return nullptr;
}

inline const char* sample_names() {
  return "T1 T2 T3 T4 T5 T1L T3L test-t1 tiny-t1 small-t1 test-t3 tiny-t3 small-t3";
}

struct node {
  std::uint8_t state[SHA1_DIGEST_SIZE];
  int height;
};

inline void sha1_finish(sha1_ctx& ctx, std::uint8_t* out) {
#if NETTLE_VERSION_MAJOR > 3 || (NETTLE_VERSION_MAJOR == 3 && NETTLE_VERSION_MINOR >= 10)
  sha1_digest(&ctx, out);  // nettle 3.10 dropped the length argument
#else
  sha1_digest(&ctx, SHA1_DIGEST_SIZE, out);
#endif
}

inline void put_be32(std::uint8_t* b, std::uint32_t v) {
  b[0] = static_cast<std::uint8_t>(v >> 24);
  b[1] = static_cast<std::uint8_t>(v >> 16);
  b[2] = static_cast<std::uint8_t>(v >> 8);
  b[3] = static_cast<std::uint8_t>(v);
}

class tree {
 public:
  explicit tree(const params& p) : p_(p) {}
  const params& parameters() const { return p_; }

  node root() const {
    std::uint8_t seed[20] = {};
    put_be32(seed + 16, static_cast<std::uint32_t>(p_.root_seed));
    node r{};
    sha1_ctx ctx;
    sha1_init(&ctx);
    sha1_update(&ctx, sizeof seed, seed);
    sha1_finish(ctx, r.state);
    r.height = 0;
    return r;
  }

  // Child i of `parent`; `gran` SHA-1 evaluations as UTS does (they all give the same state).
  node child(const node& parent, int i) const {
    node c{};
    std::uint8_t idx[4];
    put_be32(idx, static_cast<std::uint32_t>(i));
    for (int g = 0; g < p_.gran; ++g) {
      sha1_ctx ctx;
      sha1_init(&ctx);
      sha1_update(&ctx, SHA1_DIGEST_SIZE, parent.state);
      sha1_update(&ctx, sizeof idx, idx);
      sha1_finish(ctx, c.state);
    }
    c.height = parent.height + 1;
    return c;
  }

  int num_children(const node& n) const {
    int k = 0;
    bool binomial = p_.type == tree_type::binomial;
    if (p_.type == tree_type::hybrid)
      binomial = static_cast<double>(n.height) >= p_.shift * p_.gen_mx;
    if (binomial && p_.type == tree_type::binomial && n.height == 0) {
      return static_cast<int>(std::floor(p_.b0));  // only this root may exceed max_children
    }
    if (binomial)
      k = probability(n) < p_.q ? p_.m : 0;
    else
      k = geometric_children(n);
    return std::min(k, max_children);
  }

 private:
  static double probability(const node& n) {
    const std::uint32_t b = (std::uint32_t{n.state[16]} << 24) |
                            (std::uint32_t{n.state[17]} << 16) | (std::uint32_t{n.state[18]} << 8) |
                            std::uint32_t{n.state[19]};
    return static_cast<double>(b & 0x7fffffffU) / 2147483648.0;
  }

  int geometric_children(const node& n) const {
    double b_i = p_.b0;
    const int d = n.height;
    if (d > 0) {
      const double depth = d, mx = p_.gen_mx;
      switch (p_.shape) {
        case geo_shape::expdec:
          b_i = p_.b0 * std::pow(depth, -std::log(p_.b0) / std::log(mx));
          break;
        case geo_shape::cyclic:
          b_i = d > 5 * p_.gen_mx ? 0.0 : std::pow(p_.b0, std::sin(2.0 * M_PI * depth / mx));
          break;
        case geo_shape::fixed:
          b_i = d < p_.gen_mx ? p_.b0 : 0.0;
          break;
        case geo_shape::linear:
          b_i = p_.b0 * (1.0 - depth / mx);
          break;
      }
    }
    // The inverse of the geometric distribution's CDF with mean b_i (p = 1/(1+b_i)).
    const double p = 1.0 / (1.0 + b_i);
    const double u = probability(n);
    return static_cast<int>(std::floor(std::log(1.0 - u) / std::log(1.0 - p)));
  }

  params p_;
};

struct counts {
  long nodes = 0;
  long leaves = 0;
  int depth = 0;  // the greatest node height
  void add(const counts& c) {
    nodes += c.nodes;
    leaves += c.leaves;
    depth = c.depth > depth ? c.depth : depth;
  }
};

inline counts leaf_counts(const node& n) {
  return {1, 1, n.height};
}

// The serial reference: depth-first, one frame per level (T3's 1,572 levels fit any stack).
inline counts count_serial(const tree& t, const node& n) {
  const int k = t.num_children(n);
  if (k == 0) return leaf_counts(n);
  counts c{1, 0, n.height};
  for (int i = 0; i < k; ++i) c.add(count_serial(t, t.child(n, i)));
  return c;
}

// "T1", or a full parameter set "type,shape,b0,d,q,m,r[,gran]"; empty when it is neither.
inline std::optional<params> parse_tree(const std::string& s) {
  if (const sample_tree* t = find_sample(s)) return t->p;
  params p;
  int type = 0, shape = 0;
  char tail = 0;
  const int got = std::sscanf(s.c_str(), "%d,%d,%lf,%d,%lf,%d,%d,%d%c", &type, &shape, &p.b0,
                              &p.gen_mx, &p.q, &p.m, &p.root_seed, &p.gran, &tail);
  if ((got != 7 && got != 8) || type < 0 || type > 2 || shape < 0 || shape > 3 || !(p.b0 > 0) ||
      p.gen_mx < 1 || !(p.q >= 0 && p.q <= 1) || p.m < 0 || p.gran < 1)
    return std::nullopt;
  p.type = static_cast<tree_type>(type);
  p.shape = static_cast<geo_shape>(shape);
  return p;
}

}  // namespace bench::uts_std
