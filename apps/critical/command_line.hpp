#pragma once
// What the command lines of grain-cholesky and grain-mergesort share: --key=value splitting,
// range-checked integers, and the pool split line the runs print. Header-only, like
// routing.hpp beside it.
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "grain/grain.hpp"

namespace critical {

struct key_value {
  std::string key, value;
};

inline key_value split_option(const std::string& a) {
  const auto eq = a.find('=');
  return {a.substr(0, eq), eq == std::string::npos ? "" : a.substr(eq + 1)};
}

// The integer in `v` (from the argument `arg`), in [lo, hi]; std::invalid_argument otherwise.
inline long to_long(const std::string& arg, const std::string& v, long lo, long hi) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo || x > hi)
    throw std::invalid_argument("bad value in '" + arg + "' (an integer in [" + std::to_string(lo) +
                                ", " + std::to_string(hi) + "])");
  return x;
}

// "critical:1 default:1": the split of the workers the run had.
inline std::string pools_line(grain::runtime& rt) {
  std::string s;
  for (const auto& p : rt.core().pools())
    s += (s.empty() ? "" : " ") + p.name + ":" + std::to_string(p.workers.size());
  return s;
}

}  // namespace critical
