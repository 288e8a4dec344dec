#pragma once
// The inputs grain-mergesort sorts: random (Jiang et al.'s (2020) case) and the adversarial shapes
// that break careless merges and splits — already sorted, reversed, all equal, few distinct values,
// organ pipe, sawtooth. Deterministic for a seed, so a failing case can be rerun.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mergesort {

inline const std::vector<std::string>& input_names() {
  static const std::vector<std::string> n{"random", "sorted", "reverse", "equal",
                                          "few",    "organ",  "sawtooth"};
  return n;
}

inline std::vector<int> make_input(const std::string& kind, std::size_t n, std::uint64_t seed) {
  std::vector<int> v(n);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&x] {  // xorshift64*
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return static_cast<int>((x * 0x2545F4914F6CDD1Dull) >> 33);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const auto si = static_cast<int>(i);
    const auto sn = static_cast<int>(n);
    if (kind == "random")
      v[i] = next();
    else if (kind == "sorted")
      v[i] = si;
    else if (kind == "reverse")
      v[i] = sn - si;
    else if (kind == "equal")
      v[i] = 7;
    else if (kind == "few")
      v[i] = next() % 4;
    else if (kind == "organ")
      v[i] = i < n / 2 ? si : sn - si;
    else if (kind == "sawtooth")
      v[i] = si % 1000;
    else
      throw std::invalid_argument("unknown input '" + kind +
                                  "' (random, sorted, reverse, equal, few, organ, sawtooth)");
  }
  return v;
}

}  // namespace mergesort
