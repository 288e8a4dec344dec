#pragma once
// The command line of the applications (grain-alignment, grain-pyramids, grain-uts-sha1,
// bench-apps-*, and --help for every grain-* program): --key=value arguments checked as they are read, so a bad
// one is reported (by main, with the usage) before any work starts. Runtime-free.
#include <cstdio>
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

// The value of --NAME=INTEGER anywhere in argv (def when absent), in [lo, hi]; a bad value
// ends the program with status 2 and a message naming `prog` and the argument. For programs
// whose other arguments are parsed elsewhere (grain-pingpong, grain-coalescing,
// bench-mpi-pingpong).
inline long named_integer(int argc, char** argv, const char* prog, const std::string& name,
                          long def, long lo = 0, long hi = 1L << 62) {
  const std::string p = "--" + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind(p, 0) == 0) {
      try {
        return integer(split(argv[i]), lo, hi);
      } catch (const bad_argument&) {
        std::fprintf(stderr, "%s: bad value in %s (an integer in [%ld, %ld])\n", prog, argv[i], lo,
                     hi);
        std::exit(2);
      }
    }
  return def;
}

// --help or -h anywhere on the command line: prints `usage` (the program's synopsis and its own
// options) and where grain's options are listed, to stdout; main then returns 0 before the
// runtime starts. Every application answers --help this way.
inline bool help_requested(int argc, char** argv, const char* usage) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      std::fputs(
          "grain's own options (--grain:threads=N, --grain:trace=DIR, --grain:policy=FILE, ...): "
          "run with --grain:help\n",
          stdout);
      return true;
    }
  }
  return false;
}

}  // namespace bench::args
