#pragma once
// The command line of the seed-002 applications (grain-alignment, grain-pyramids,
// grain-uts-std and bench-apps-*): --key=value arguments checked as they are read, so a bad
// one is reported (by main, with the usage) before any work starts. Runtime-free.
#include <cstdlib>
#include <string>

namespace bench::args {

struct bad_argument {
  std::string arg;
};

struct kv {
  std::string key, value, arg;
};

inline kv split(const char* a) {
  const std::string s = a;
  const auto eq = s.find('=');
  if (eq == std::string::npos) return {s, "", s};
  return {s.substr(0, eq), s.substr(eq + 1), s};
}

// An integer in [lo, hi], or bad_argument.
inline long integer(const kv& a, long lo, long hi) {
  char* end = nullptr;
  const long x = std::strtol(a.value.c_str(), &end, 10);
  if (a.value.empty() || *end != '\0' || x < lo || x > hi) throw bad_argument{a.arg};
  return x;
}

}  // namespace bench::args
