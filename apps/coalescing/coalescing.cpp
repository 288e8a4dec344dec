// grain-coalescing: Wagle 2019's toy application for parcel coalescing, in phases.
//   mpirun -np 2 grain-coalescing [--phases=dense,sparse,dense] [--parcels=N] [--work-ns=W]
//                                 [--gap-us=G] [--pace-us=P] [--chains=K]
//                                 --grain:coalescing=work
// Every locality sends a stream of small actions (`work`: W ns of computation each) to every
// other locality, in phases of four kinds (per destination):
//   dense   N parcels as fast as it can (a bulk exchange);
//   sparse  N/20 parcels with G µs of sleep between two posts (a trickle);
//   paced   N/4 parcels with P µs of computation before each post (an application that
//           computes between sends: parcels P µs apart, too far apart for a short interval);
//   chains  K request chains to every other locality, N/200 hops each: a parcel that runs
//           sends the next one back (latency-bound: a parcel that waits for company delays
//           its chain, and there are only K parcels in flight per destination).
// A phase ends when every parcel of it has run everywhere. Prints one JSON line per phase and
// one for the whole run (seconds, parcels per second, the network overhead of Eq. 3.4 on
// rank 0 since the start, and over the phase from both ranks' background and loop time, and
// that background time itself: Eq. 3.3).
// grain-coalescing-direct is the same program with `work` a direct action (it only computes
// and posts, never waits: HPX would make it a plain direct action): the receiver runs the
// parcels in its network progress instead of as tasks (docs/coalescing.md, "The per-parcel
// path").
// Coalescing is on when --grain:coalescing=work is given; its knobs
// (coalescing.work.parcels/.interval) come from --grain:knob=... or a policy
// (scripts/sweep-coalescing, docs/coalescing.md).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/app_args.hpp"
#include "common/app_main.hpp"
#include "grain/clock.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/app.hpp"
#include "grain/instrumentation/counters.hpp"

namespace {

std::atomic<long> g_ran{0};
std::atomic<std::int64_t> g_block_start{0};
constexpr long block = 1024;

// The receiver's side of the cost, as a metric a search can minimise (policies-lua/
// tune_coalescing.lua): wall time per parcel run here, over the last `block` parcels.
void time_block(long n) {
  if (n % block != 0) return;
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  const std::int64_t t0 = g_block_start.exchange(now);
  if (t0 != 0)
    grain::sample_value("/app/coalescing/ns-per-parcel", static_cast<double>(now - t0) / block);
}

void work(std::int64_t ns, std::uint32_t from, std::int64_t hops);
#if GRAIN_COALESCING_DIRECT
using work_action = grain::direct_action<&work>;
#else
using work_action = grain::action<&work>;
#endif

// W ns of computation; in a chain (hops > 0) it then sends the chain's next parcel back.
// The spin reads grain's clock (the TSC where it is invariant): a clock_gettime costs 20-40
// ns in a VM, and a spin of 200 ns on it overshot by that much, every parcel.
void work(std::int64_t ns, std::uint32_t from, std::int64_t hops) {
  const std::uint64_t until = grain::now_ns() + static_cast<std::uint64_t>(ns);
  while (grain::now_ns() < until) {
  }
  time_block(g_ran.fetch_add(1, std::memory_order_relaxed) + 1);
  if (hops > 1)
    grain::post(grain::locality(from), work_action{}, ns, grain::find_here().rank(), hops - 1);
}

long ran() {
  return g_ran.load();
}

void spin_for(std::int64_t ns) {
  const std::uint64_t until = grain::now_ns() + static_cast<std::uint64_t>(ns);
  while (grain::now_ns() < until) {
  }
}

// This locality's part of a phase: n parcels to every other locality, each after `pace_us`
// of computation and followed by `gap_us` of sleep.
void send_phase(std::int64_t n, std::int64_t work_ns, std::int64_t gap_us, std::int64_t pace_us) {
  const auto all = grain::find_all_localities();
  for (std::int64_t i = 0; i < n; ++i) {
    if (pace_us > 0) spin_for(pace_us * 1000);
    for (grain::locality l : all)
      if (l != grain::find_here())
        grain::post(l, work_action{}, work_ns, grain::find_here().rank(), std::int64_t(0));
    if (gap_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
  }
}

// The first parcel of k chains of `hops` parcels to every other locality.
void start_chains(std::int64_t k, std::int64_t work_ns, std::int64_t hops) {
  for (std::int64_t i = 0; i < k; ++i)
    for (grain::locality l : grain::find_all_localities())
      if (l != grain::find_here())
        grain::post(l, work_action{}, work_ns, grain::find_here().rank(), hops);
}

// Network overhead (Eq. 3.4) of this locality's workers since the start: Σbackground, Σloop.
std::vector<double> overhead_totals() {
  auto read = [](const char* n) {
    auto v = grain::instrumentation::registry().value(
        "/threads{locality#" + std::to_string(grain::find_here().rank()) + "/total}/time/" + n);
    return v && v->available ? v->value : 0.0;
  };
  return {read("background-work"), read("overall")};
}

long arg(int argc, char** argv, const std::string& name, long def) {
  return bench::args::named_integer(argc, argv, "grain-coalescing", name, def);
}

double counter(const std::string& name) {
  auto v = grain::instrumentation::registry().value(name);
  return v && v->available ? v->value : 0;
}

}  // namespace

// --help (bench::app_main).
#if GRAIN_COALESCING_DIRECT
#define program_name "grain-coalescing-direct"
#else
#define program_name "grain-coalescing"
#endif
constexpr char usage_text[] =
    "usage: mpirun -np 2 " program_name
    " [--phases=dense,sparse,dense] [--parcels=N] "
    "[--work-ns=W]\n"
    "                                    [--gap-us=G] [--pace-us=P] [--chains=K] [--grain:...]\n"
    "Every locality sends small actions to every other in phases; one JSON line per phase.\n"
    "  --phases=LIST      dense, sparse, paced and chains phases, in order (default "
    "dense,sparse,dense)\n"
    "  --parcels=N        parcels per destination of a dense phase (100000; sparse N/20, paced "
    "N/4)\n"
    "  --work-ns=W        computation of each action in nanoseconds (200)\n"
    "  --gap-us=G         sleep between two posts of a sparse phase (200)\n"
    "  --pace-us=P        computation before each post of a paced phase (10)\n"
    "  --chains=K         request chains per destination of a chains phase (4)\n"
    "Coalescing is on with --grain:coalescing=work (its knobs: --grain:knob=coalescing.work.*).\n";

namespace {

// The program, after bench::app_main answered --help. An error inside the runtime's scope goes
// to grain::fatal_error there, while the runtime is up: with several ranks every rank ends now
// instead of waiting for the others at the runtime's stop.
int run_main(int argc, char** argv) {
  // Options first: a bad one ends the program before the runtime starts (every rank sees the
  // same command line).
  std::string phases = "dense,sparse,dense";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--phases=", 0) == 0) {
      phases = a.substr(9);
    } else if (a.rfind("--grain:", 0) && a.rfind("--parcels=", 0) && a.rfind("--work-ns=", 0) &&
               a.rfind("--gap-us=", 0) && a.rfind("--pace-us=", 0) && a.rfind("--chains=", 0)) {
      std::fprintf(stderr,
                   "grain-coalescing: unknown option %s (--phases= --parcels= --work-ns= "
                   "--gap-us= --pace-us= --chains=)\n",
                   argv[i]);
      return 2;
    }
  }
  const long n = arg(argc, argv, "parcels", 100000);
  const long work_ns = arg(argc, argv, "work-ns", 200);
  const long gap_us = arg(argc, argv, "gap-us", 200);
  const long pace_us = arg(argc, argv, "pace-us", 10);
  const long chains = arg(argc, argv, "chains", 4);
  grain::runtime rt(argc, argv);  // ranks other than 0 serve here
  std::vector<std::string> list;
  std::stringstream ss(phases);
  for (std::string p; std::getline(ss, p, ',');) {
    if (p != "dense" && p != "sparse" && p != "paced" && p != "chains") {
      std::fprintf(stderr, "grain-coalescing: unknown phase '%s' (dense, sparse, paced, chains)\n",
                   p.c_str());
      return 2;
    }
    list.push_back(p);
  }
  if (grain::get_num_localities() < 2) {
    std::fprintf(stderr, "grain-coalescing: needs two localities or more: mpirun -np 2 ...\n");
    return 2;
  }
  // A call a rank refuses (another program there) or a rank that died: a message and status
  // 1 on every rank, not std::terminate.
  try {
    const auto all = grain::find_all_localities();
    const long peers = static_cast<long>(all.size()) - 1;
    const std::string overhead = "/threads{locality#0/total}/network-overhead";
    long expected = 0;  // parcels every locality has run so far
    auto wait_for_all = [&] {
      for (grain::locality l : all)
        while (grain::async(l, grain::action<&ran>{}).get() < expected) {
        }
    };
    auto start_all = [&](long count, long gap, long pace) {
      std::vector<grain::future<void>> fs;
      fs.reserve(all.size());
      for (grain::locality l : all)
        fs.push_back(grain::async(l, grain::action<&send_phase>{}, std::int64_t(count),
                                  std::int64_t(work_ns), std::int64_t(gap), std::int64_t(pace)));
      for (auto& f : fs) f.get();
      expected += count * peers;
    };
    auto totals = [&] {  // Σ over the localities of (background, loop) time
      std::vector<double> t{0, 0};
      for (grain::locality l : all) {
        const auto v = grain::async(l, grain::action<&overhead_totals>{}).get();
        t[0] += v[0];
        t[1] += v[1];
      }
      return t;
    };
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& p : list) {
      const auto before = totals();
      const auto t0 = std::chrono::steady_clock::now();
      long count = 0;  // parcels per destination
      if (p == "chains") {
        // Every locality starts K chains to every other one; a chain's hops alternate between
        // the two, so each locality runs about half of them.
        const long hops = std::max(2L, n / 200);
        std::vector<grain::future<void>> fs;
        fs.reserve(all.size());
        for (grain::locality l : all)
          fs.push_back(grain::async(l, grain::action<&start_chains>{}, std::int64_t(chains),
                                    std::int64_t(work_ns), std::int64_t(hops)));
        for (auto& f : fs) f.get();
        count = chains * hops;
        expected += count * peers;
        wait_for_all();
      } else {
        count = p == "dense" ? n : p == "paced" ? std::max(1L, n / 4) : std::max(1L, n / 20);
        start_all(count, p == "sparse" ? gap_us : 0, p == "paced" ? pace_us : 0);
        wait_for_all();
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto after = totals();
      const double loop = after[1] - before[1];
      const long parcels = count * peers * static_cast<long>(all.size());
      std::printf(
          "{\"phase\":\"%s\",\"seconds\":%.6f,\"parcels\":%ld,\"parcels_per_s\":%.0f,"
          "\"network_overhead\":%.4f,\"phase_network_overhead\":%.4f,"
          "\"phase_background_s\":%.6f}\n",
          p.c_str(), s, parcels, static_cast<double>(parcels) / s, counter(overhead),
          loop > 0 ? (after[0] - before[0]) / loop : 0.0, (after[0] - before[0]) / 1e9);
    }
    const double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "{\"phase\":\"total\",\"seconds\":%.6f,\"parcels_per_message\":%.2f,"
        "\"timer_lateness_us\":%.2f}\n",
        total, counter("/coalescing{action#work/locality#0}/count/average-parcels-per-message"),
        counter("/coalescing{locality#0/total}/time/timer-lateness") / 1000.0);
  } catch (const std::exception& e) {
    return grain::fatal_error("grain-coalescing", e);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, program_name, usage_text, run_main);
}
