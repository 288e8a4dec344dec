// Load injection (load_injection.hpp): counter-based draws (SplitMix64 over Wickramasinghe et al.
// 2017 and the task's coordinates), Box-Muller for the gaussian, Knuth's product method for the
// poisson (a normal approximation above a mean of 60), the inverse CDF for the exponential; the
// spin is a dependent multiply-xor chain that the compiler cannot shorten.
#include "load_injection.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <vector>

namespace load_injection {

namespace {

std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A stream of uniforms in (0, 1) for one coordinate.
struct stream {
  std::uint64_t state;
  double next() { return (static_cast<double>(splitmix(state) >> 11) + 0.5) * 0x1.0p-53; }
};

stream stream_for(std::uint64_t seed, std::uint64_t salt, std::uint64_t iteration,
                  std::uint64_t who) {
  std::uint64_t x = seed ^ (salt * 0xd1b54a32d192ed03ULL);
  std::uint64_t s = splitmix(x) ^ iteration;
  s = splitmix(s) ^ who;
  return {splitmix(s)};
}

double gaussian(stream& r) {
  const double u1 = r.next(), u2 = r.next();
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

double poisson(stream& r, double mean) {
  if (mean > 60) return std::max(0.0, std::round(mean + std::sqrt(mean) * gaussian(r)));
  const double limit = std::exp(-mean);
  double p = r.next();
  int k = 0;
  while (p > limit) {
    p *= r.next();
    ++k;
  }
  return k;
}

std::atomic<double> per_us{0};

}  // namespace

std::optional<distribution> distribution_from_name(std::string_view n) {
  if (n == "uniform") return distribution::uniform;
  if (n == "scaled") return distribution::scaled;
  if (n == "gaussian") return distribution::gaussian;
  if (n == "poisson") return distribution::poisson;
  if (n == "exponential") return distribution::exponential;
  return std::nullopt;
}

const char* distribution_name(distribution d) {
  switch (d) {
    case distribution::uniform:
      return "uniform";
    case distribution::scaled:
      return "scaled";
    case distribution::gaussian:
      return "gaussian";
    case distribution::poisson:
      return "poisson";
    case distribution::exponential:
      return "exponential";
  }
  return "?";
}

void check(const load_spec& s) {
  auto bad = [](const std::string& why) { throw std::invalid_argument(why); };
  if (!(s.unit_us > 0)) bad("the work quantum must be > 0 us");
  if (!(s.fraction >= 0 && s.fraction <= 1)) bad("the fraction must be in [0, 1]");
  if (s.ranks == 0 || s.tasks_per_rank == 0) bad("ranks and tasks per rank must be >= 1");
  switch (s.dist) {
    case distribution::uniform:
      if (!(s.a >= 0 && s.b >= s.a)) bad("uniform needs 0 <= a <= b");
      break;
    case distribution::scaled:
      if (!(s.a >= 0)) bad("scaled needs s >= 0");
      break;
    case distribution::gaussian:
      if (!(s.a >= 0 && s.b >= 0)) bad("gaussian needs mu >= 0 and sigma >= 0");
      break;
    case distribution::poisson:
    case distribution::exponential:
      if (!(s.a > 0)) bad(std::string(distribution_name(s.dist)) + " needs a mean > 0");
      break;
  }
}

double units(const load_spec& s, std::uint64_t iteration, std::uint32_t rank, std::uint32_t task) {
  const std::uint64_t who = (static_cast<std::uint64_t>(rank) << 32) | task;
  if (s.fraction < 1) {
    stream pick = stream_for(s.seed, 1, iteration, s.per_rank ? rank : who);
    if (pick.next() >= s.fraction) return 1;
  }
  stream r = stream_for(s.seed, 2, iteration, who);
  switch (s.dist) {
    case distribution::uniform:
      return s.a + (s.b - s.a) * r.next();
    case distribution::scaled: {
      // One assignment of the iteration (over the whole job) gets 1 + s units.
      stream one = stream_for(s.seed, 3, iteration, 0);
      const auto n = static_cast<std::uint64_t>(s.ranks) * s.tasks_per_rank;
      const auto chosen = std::min<std::uint64_t>(
          n - 1, static_cast<std::uint64_t>(one.next() * static_cast<double>(n)));
      return (static_cast<std::uint64_t>(rank) * s.tasks_per_rank + task) == chosen ? 1 + s.a : 1;
    }
    case distribution::gaussian:
      return std::max(0.0, s.a + s.b * gaussian(r));
    case distribution::poisson:
      return poisson(r, s.a);
    case distribution::exponential:
      return -s.a * std::log(r.next());
  }
  return 1;
}

namespace {
std::uint64_t spin_iterations(std::uint64_t n) {
  std::uint64_t x = 0x2545f4914f6cdd1dULL ^ n;
  for (std::uint64_t i = 0; i < n; ++i) {
    x ^= x >> 12;
    x *= 0x9e3779b97f4a7c15ULL;
    asm volatile("" : "+r"(x));
  }
  return x;
}
}  // namespace

double calibrate() {
  // The fastest of several 20 ms runs: a preempted run only makes a unit longer.
  const std::uint64_t n = 1'000'000;
  double best = 0;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t done = 0;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(20)) {
      spin_iterations(n);
      done += n;
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(done) / us);
  }
  per_us.store(best);
  return best;
}

void set_iterations_per_us(double v) {
  if (!(v > 0)) throw std::invalid_argument("iterations per us must be > 0");
  per_us.store(v);
}

double iterations_per_us() {
  if (per_us.load() == 0) calibrate();
  return per_us.load();
}

std::uint64_t spin_us(double us) {
  if (us <= 0) return 0;
  return spin_iterations(static_cast<std::uint64_t>(us * iterations_per_us()));
}

}  // namespace load_injection
