// grain-pingpong: the cost of a parcel between two localities.
//   mpirun -np 2 grain-pingpong [--round-trips=N] [--posts=N] [--bytes=B] [--reps=R]
// round trip: rank 0 calls an action on rank 1 that returns its B-byte argument, one call at
// a time (latency); message rate: rank 0 posts N one-way actions with a B-byte argument to
// rank 1, which counts them; the time until rank 1 has run all of them (one call at the end
// asks). apps/bench/mpi_pingpong.cpp does the same with plain MPI; scripts/bench-pingpong
// runs both in one go and prints the ratios (docs/distributed.md).
// Every action here only returns or counts, never waits: they are direct actions, run by the
// receiving locality in its network progress without a task (docs/distributed.md).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/app_args.hpp"
#include "common/app_main.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"

namespace {

std::atomic<long> g_received{0};

std::vector<char> bounce(std::vector<char> b) {
  return b;
}
std::uint64_t bounce8(std::uint64_t x) {
  return x;
}
void take(const std::vector<char>& /*payload*/) {
  g_received.fetch_add(1);
}
void take8(std::uint64_t) {
  g_received.fetch_add(1);
}
long received() {
  return g_received.load();
}
void reset() {
  g_received.store(0);
}

// This locality's parcel counter `what` (/parcels{locality#0/total}/...).
double parcels_counter(const std::string& what) {
  const auto v = grain::instrumentation::registry().value("/parcels{locality#0/total}/" + what);
  return v && v->available ? v->value : 0.0;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

long arg(int argc, char** argv, const std::string& name, long def) {
  return bench::args::named_integer(argc, argv, "grain-pingpong", name, def);
}

}  // namespace

// --help (bench::app_main).
constexpr char usage_text[] =
    "usage: mpirun -np 2 grain-pingpong [--round-trips=N] [--posts=N] [--bytes=B] [--reps=R] "
    "[--grain:...]\n"
    "The cost of a parcel between two localities: round-trip latency and one-way message rate.\n"
    "  --round-trips=N    calls of an action that returns its argument, one at a time (20000)\n"
    "  --posts=N          one-way actions posted for the message rate (200000)\n"
    "  --bytes=B          the argument's size in bytes (default 8)\n"
    "  --reps=R           repetitions of each measurement (5)\n";

namespace {

// The program, after bench::app_main answered --help. An error inside the runtime's scope goes
// to grain::fatal_error there, while the runtime is up: with several ranks every rank ends now
// instead of waiting for the others at the runtime's stop.
int run_main(int argc, char** argv) {
  // Options first: a bad one ends the program before the runtime starts (every rank sees the
  // same command line).
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--grain:", 0) && a.rfind("--round-trips=", 0) && a.rfind("--posts=", 0) &&
        a.rfind("--bytes=", 0) && a.rfind("--reps=", 0)) {
      std::fprintf(stderr,
                   "grain-pingpong: unknown option %s (--round-trips= --posts= --bytes= --reps=)\n",
                   argv[i]);
      return 2;
    }
  }
  const long trips = arg(argc, argv, "round-trips", 20000);
  const long posts = arg(argc, argv, "posts", 200000);
  const long bytes = arg(argc, argv, "bytes", 8);
  const long reps = std::max(1L, arg(argc, argv, "reps", 5));
  grain::runtime rt(argc, argv);  // ranks other than 0 serve here
  if (grain::get_num_localities() < 2) {
    std::fprintf(stderr, "grain-pingpong: needs two localities: mpirun -np 2 grain-pingpong\n");
    return 2;
  }
  const grain::locality peer(1);
  const std::vector<char> payload(static_cast<std::size_t>(bytes), 'x');
  // The measurement runs in a task, as a grain program would: a call's get() suspends the task
  // and frees the worker to progress the network, and the answer resumes it on that worker
  // (from main's OS thread every answer would also wake a blocked thread).
  // A refused call (another program on rank 1: docs/distributed.md, "Compact parcels") or a
  // dead rank ends the program with its error, not with std::terminate.
  try {
    return grain::async([&]() -> int {
             for (long r = 0; r < reps; ++r) {
               // Round trips.
               auto t0 = std::chrono::steady_clock::now();
               for (long i = 0; i < trips; ++i) {
                 if (bytes == 8) {
                   if (grain::async(peer, grain::direct_action<&bounce8>{}, std::uint64_t(i))
                           .get() != std::uint64_t(i))
                     return 1;
                 } else if (grain::async(peer, grain::direct_action<&bounce>{}, payload)
                                .get()
                                .size() != payload.size()) {
                   return 1;
                 }
               }
               const double rt_us = seconds_since(t0) / static_cast<double>(trips) * 1e6;
               // One-way rate.
               grain::async(peer, grain::direct_action<&reset>{}).get();
               const double bytes0 = parcels_counter("data/sent");
               const double messages0 = parcels_counter("count/messages-sent");
               t0 = std::chrono::steady_clock::now();
               for (long i = 0; i < posts; ++i) {
                 if (bytes == 8)
                   grain::post(peer, grain::direct_action<&take8>{}, std::uint64_t(i));
                 else
                   grain::post(peer, grain::direct_action<&take>{}, payload);
               }
               while (grain::async(peer, grain::direct_action<&received>{}).get() < posts) {
               }
               const double rate = static_cast<double>(posts) / seconds_since(t0);
               // What a post puts on the wire (its message, headers included), from the counters
               // (the few calls that asked for the count are among them): the size a plain-MPI
               // reference must send to compare like with like.
               const double wire =
                   (parcels_counter("data/sent") - bytes0) /
                   std::max(1.0, parcels_counter("count/messages-sent") - messages0);
               std::printf(
                   "{\"system\":\"grain\",\"bytes\":%ld,\"round_trip_us\":%.3f,\"msg_rate\":%.0f,"
                   "\"wire_bytes\":%.1f}\n",
                   bytes, rt_us, rate, wire);
               std::fflush(stdout);
             }
             return 0;
           })
        .get();
  } catch (const std::exception& e) {
    return grain::fatal_error("grain-pingpong", e);  // several ranks: every rank ends now
  }
}

}  // namespace

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, "grain-pingpong", usage_text, run_main);
}
