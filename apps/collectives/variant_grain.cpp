// The grain variant of grain-collectives-bench: region A as high-priority tasks that each
// contribute to a two-level all_reduce (local contributions combined in place, then one MPI
// collective per locality, progressed as background work) and do not wait for it; region C as
// ordinary tasks spawned with them, so a worker that finished its part of A runs C (or A of
// the next iteration, up to --lookahead iterations ahead) while the reduction completes. D
// checks each result. Every locality runs the same loop as an action started by rank 0.
#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grain/grain.hpp"
#include "variants.hpp"

namespace collectives_bench {

using namespace grain;  // NOLINT(google-build-using-namespace): this file is the grain variant

namespace {

config g_cfg;  // parsed on every rank before the runtime starts

struct in_flight {
  std::vector<future<void>> a, c;
  std::vector<future<double>> b;  // one per task of A, written by that task
};

std::unique_ptr<in_flight> start_iteration(const config& cfg, std::uint64_t it,
                                           std::uint64_t generation) {
  auto s = std::make_unique<in_flight>();
  const std::uint32_t rank = find_here().rank();
  const auto n = static_cast<std::uint32_t>(cfg.tasks);
  s->b.resize(n);
  in_flight* st = s.get();
  for (std::uint32_t t = 0; t < n; ++t)
    s->a.push_back(grain::async(executor{priority::high}, [&cfg, st, it, generation, rank, t, n] {
      spin_us(units(cfg.load, it, rank, t) * cfg.load.unit_us);
      st->b[t] = all_reduce(task_value(std::uint64_t{rank} * n + t), std::plus<>{},
                            {n, static_cast<std::int64_t>(generation)});
    }));
  for (double us : overlap_pieces(cfg)) s->c.push_back(grain::async([us] { spin_us(us); }));
  return s;
}

long finish_iteration(in_flight& s, double expect) {
  long errors = 0;
  for (auto& f : s.a) f.get();
  for (auto& f : s.b) errors += f.get() != expect;
  for (auto& f : s.c) f.get();
  return errors;
}

struct rank_result {
  double seconds = 0;
  long errors = 0;
};

rank_result run_locality() {
  g_cfg.load.ranks = get_num_localities();  // (ranks other than 0 never left the constructor)
  const config& cfg = g_cfg;
  const std::uint32_t ranks = get_num_localities();
  rank_result r;
  if (cfg.latency) {
    for (long i = 0; i < cfg.warmup; ++i) all_reduce(1.0, std::plus<>{}).get();
    collectives::barrier().get();
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < cfg.iterations; ++i)
      r.errors += all_reduce(1.0, std::plus<>{}).get() != ranks;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
  const double expect = expected_sum(ranks, static_cast<std::uint64_t>(cfg.tasks));
  const std::uint64_t base = collectives::next_generation(detail::collective_kind::all_reduce);
  std::deque<std::unique_ptr<in_flight>> window;
  std::chrono::steady_clock::time_point t0;
  const long total = cfg.warmup + cfg.iterations;
  for (long i = 0; i < total; ++i) {
    if (i == cfg.warmup) {
      // Measured iterations start together everywhere, after the warm-up drained.
      while (!window.empty()) {
        finish_iteration(*window.front(), expect);
        window.pop_front();
      }
      collectives::barrier().get();
      t0 = std::chrono::steady_clock::now();
    }
    window.push_back(
        start_iteration(cfg, static_cast<std::uint64_t>(i), base + static_cast<std::uint64_t>(i)));
    while (static_cast<long>(window.size()) > cfg.lookahead) {
      r.errors += finish_iteration(*window.front(), expect);
      window.pop_front();
    }
  }
  while (!window.empty()) {
    r.errors += finish_iteration(*window.front(), expect);
    window.pop_front();
  }
  collectives::barrier().get();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

int run_grain(const config& cfg, int argc, char** argv) {
  g_cfg = cfg;
  // --threads gives the workers unless --grain:threads does.
  std::vector<std::string> args;
  bool threads_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--grain:", 0) != 0) continue;
    threads_given = threads_given || a.rfind("--grain:threads=", 0) == 0;
    args.push_back(a);
  }
  if (!threads_given) args.push_back("--grain:threads=" + std::to_string(cfg.threads));
  std::unique_ptr<grain::runtime> rt;
  try {
    rt = std::make_unique<grain::runtime>(args);  // ranks other than 0 serve here and exit
  } catch (const option_error& e) {
    std::fprintf(stderr, "grain-collectives-bench: %s\n", e.what());
    return 2;
  } catch (const startup_exit& e) {  // --grain:help, --grain:version, --grain:list-counters
    return e.code;
  }
  g_cfg.load.ranks = get_num_localities();
  std::vector<future<rank_result>> fs;
  for (locality l : find_all_localities()) fs.push_back(grain::async(l, action<&run_locality>{}));
  rank_result mine;
  long errors = 0;
  try {
    // In the order they finish, so that the first error ends the run at once: a collective
    // that failed (a rank died, or stopped past --grain:collectives-timeout), or a rank running
    // another program that refused run_locality while ours waits for its contributions.
    std::vector<std::size_t> rank(fs.size());
    for (std::size_t i = 0; i < rank.size(); ++i) rank[i] = i;
    while (!fs.empty()) {
      auto any = when_any(std::move(fs)).get();
      fs = std::move(any.futures);
      const rank_result r = fs[any.index].get();
      if (rank[any.index] == 0) mine = r;
      errors += r.errors;
      fs.erase(fs.begin() + static_cast<std::ptrdiff_t>(any.index));
      rank.erase(rank.begin() + static_cast<std::ptrdiff_t>(any.index));
    }
  } catch (const std::exception& e) {
    return fatal_error("grain-collectives-bench", e);  // several ranks: every rank ends now
  }
  print_result(g_cfg, get_num_localities(), mine.seconds, errors);
  rt->stop();
  return errors == 0 ? 0 : 1;
}

}  // namespace collectives_bench
