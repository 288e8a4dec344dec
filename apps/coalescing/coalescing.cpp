// grain-coalescing: seed 001's toy application for parcel coalescing, in phases.
//   mpirun -np 2 grain-coalescing [--phases=dense,sparse,dense] [--parcels=N] [--work-ns=W]
//                                 [--gap-us=G] --grain:coalescing=work
// Every locality sends a stream of small actions (`work`: W ns of computation each) to every
// other locality. A dense phase posts N of them per destination as fast as it can; a sparse
// phase posts N/20 with G µs between two posts (a trickle). A phase ends when every parcel
// of it has run everywhere. Prints one JSON line per phase and one for the whole run
// (seconds, parcels per second, the network overhead of Eq. 3.4 on rank 0). Coalescing is
// on when --grain:coalescing=work is given; its knobs (coalescing.work.parcels/.interval)
// come from --grain:knob=... or a policy (scripts/sweep-coalescing, docs/coalescing.md).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/app_args.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"

namespace {

std::atomic<long> g_ran{0};

void work(std::int64_t ns) {
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::nanoseconds(ns)) {
  }
  g_ran.fetch_add(1, std::memory_order_relaxed);
}

long ran() {
  return g_ran.load();
}

// This locality's part of a phase: n parcels to every other locality, `gap_us` apart.
void send_phase(std::int64_t n, std::int64_t work_ns, std::int64_t gap_us) {
  const auto all = grain::find_all_localities();
  for (std::int64_t i = 0; i < n; ++i) {
    for (grain::locality l : all)
      if (l != grain::find_here()) grain::post(l, grain::action<&work>{}, work_ns);
    if (gap_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
  }
}

long arg(int argc, char** argv, const std::string& name, long def) {
  return bench::args::named_integer(argc, argv, "grain-coalescing", name, def);
}

double counter(const std::string& name) {
  auto v = grain::instrumentation::registry().value(name);
  return v && v->available ? v->value : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Options first: a bad one ends the program before the runtime starts (every rank sees the
  // same command line).
  std::string phases = "dense,sparse,dense";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--phases=", 0) == 0) {
      phases = a.substr(9);
    } else if (a.rfind("--grain:", 0) && a.rfind("--parcels=", 0) && a.rfind("--work-ns=", 0) &&
               a.rfind("--gap-us=", 0)) {
      std::fprintf(stderr,
                   "grain-coalescing: unknown option %s (--phases= --parcels= --work-ns= "
                   "--gap-us=)\n",
                   argv[i]);
      return 2;
    }
  }
  const long n = arg(argc, argv, "parcels", 100000);
  const long work_ns = arg(argc, argv, "work-ns", 200);
  const long gap_us = arg(argc, argv, "gap-us", 200);
  grain::runtime rt(argc, argv);  // ranks other than 0 serve here
  std::vector<std::string> list;
  std::stringstream ss(phases);
  for (std::string p; std::getline(ss, p, ',');) {
    if (p != "dense" && p != "sparse") {
      std::fprintf(stderr, "grain-coalescing: unknown phase '%s' (dense, sparse)\n", p.c_str());
      return 2;
    }
    list.push_back(p);
  }
  if (grain::get_num_localities() < 2) {
    std::fprintf(stderr, "grain-coalescing: needs two localities or more: mpirun -np 2 ...\n");
    return 2;
  }
  const auto all = grain::find_all_localities();
  const long peers = static_cast<long>(all.size()) - 1;
  const std::string overhead = "/threads{locality#0/total}/network-overhead";
  long expected = 0;  // parcels every locality has run so far
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& p : list) {
    const bool dense = p == "dense";
    const long count = dense ? n : std::max(1L, n / 20);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<grain::future<void>> fs;
    fs.reserve(all.size());
    for (grain::locality l : all)
      fs.push_back(grain::async(l, grain::action<&send_phase>{}, std::int64_t(count),
                                std::int64_t(work_ns), std::int64_t(dense ? 0 : gap_us)));
    for (auto& f : fs) f.get();
    expected += count * peers;
    for (grain::locality l : all)
      while (grain::async(l, grain::action<&ran>{}).get() < expected) {
      }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "{\"phase\":\"%s\",\"seconds\":%.6f,\"parcels\":%ld,\"parcels_per_s\":%.0f,"
        "\"network_overhead\":%.4f}\n",
        p.c_str(), s, count * peers * static_cast<long>(all.size()),
        static_cast<double>(count * peers * static_cast<long>(all.size())) / s, counter(overhead));
  }
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "{\"phase\":\"total\",\"seconds\":%.6f,\"parcels_per_message\":%.2f,"
      "\"timer_lateness_us\":%.2f}\n",
      total, counter("/coalescing{action#work/locality#0}/count/average-parcels-per-message"),
      counter("/coalescing{locality#0/total}/time/timer-lateness") / 1000.0);
  return 0;
}
