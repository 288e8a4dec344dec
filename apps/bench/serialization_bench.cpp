// bench-serialization: the two serialization paths of grain's parcels (serialization.hpp) on
// the same values — memcpy for trivially copyable arguments, cereal binary archives for the
// rest — encode + decode per call, median of --reps rounds (docs/distributed.md, "Cost").
//   bench-serialization [--calls=N] [--reps=R]
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "grain/distributed/serialization.hpp"

namespace {

long arg(int argc, char** argv, const std::string& name, long def) {
  const std::string p = "--" + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind(p, 0) == 0) return std::strtol(argv[i] + p.size(), nullptr, 10);
  return def;
}

template <class Encode, class Decode>
double ns_per_call(long calls, long reps, Encode enc, Decode dec) {
  std::vector<double> t;
  std::vector<char> buf;
  double sink = 0;
  for (long r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) {
      buf.clear();
      enc(buf, i);
      sink += dec(buf);
    }
    t.push_back(
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
        static_cast<double>(calls));
  }
  if (sink == 0.5) std::printf("%f\n", sink);  // keep the work
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

// The program; main() turns an error into a message and a status.
static int run_main(int argc, char** argv) {
  const long calls = arg(argc, argv, "calls", 1000000);
  const long reps = std::max(1L, arg(argc, argv, "reps", 5));
  using grain::detail::cereal_decode;
  using grain::detail::cereal_encode;
  using grain::detail::memcpy_decode;
  using grain::detail::memcpy_encode;
  // An 8-byte argument (grain-pingpong's), three scalars, and a 512-byte array.
  const double m8 = ns_per_call(
      calls, reps, [](auto& b, long i) { memcpy_encode(b, std::uint64_t(i)); },
      [](auto& b) { return double(std::get<0>(memcpy_decode<std::uint64_t>(b))); });
  const double c8 = ns_per_call(
      calls, reps, [](auto& b, long i) { cereal_encode(b, std::uint64_t(i)); },
      [](auto& b) { return double(std::get<0>(cereal_decode<std::uint64_t>(b))); });
  const double m3 = ns_per_call(
      calls, reps, [](auto& b, long i) { memcpy_encode(b, int(i), 2.5, char('x')); },
      [](auto& b) { return std::get<1>(memcpy_decode<int, double, char>(b)); });
  const double c3 = ns_per_call(
      calls, reps, [](auto& b, long i) { cereal_encode(b, int(i), 2.5, char('x')); },
      [](auto& b) { return std::get<1>(cereal_decode<int, double, char>(b)); });
  std::array<double, 64> a{};
  const double ma = ns_per_call(
      calls, reps,
      [&](auto& b, long i) {
        a[0] = double(i);
        memcpy_encode(b, a);
      },
      [](auto& b) { return std::get<0>(memcpy_decode<std::array<double, 64>>(b))[0]; });
  const double ca = ns_per_call(
      calls, reps,
      [&](auto& b, long i) {
        a[0] = double(i);
        cereal_encode(b, a);
      },
      [](auto& b) { return std::get<0>(cereal_decode<std::array<double, 64>>(b))[0]; });
  std::printf("| arguments | memcpy (ns/call) | cereal (ns/call) | cereal / memcpy |\n");
  std::printf("|---|---:|---:|---:|\n");
  std::printf("| one uint64_t | %.1f | %.1f | %.1f |\n", m8, c8, c8 / m8);
  std::printf("| int, double, char | %.1f | %.1f | %.1f |\n", m3, c3, c3 / m3);
  std::printf("| std::array<double, 64> | %.1f | %.1f | %.1f |\n", ma, ca, ca / ma);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench-serialization: error: %s\n", e.what());
    return 1;
  }
}
