#include "actions.hpp"

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <thread>

namespace grain::test::dist {

namespace {
std::atomic<long> g_bumped{0};
std::atomic<int> g_markers{0};
}  // namespace

int square(int x) {
  return x * x;
}
std::uint32_t where() {
  return find_here().rank();
}
std::string shout(const std::string& s) {
  return s + "!";
}
std::vector<double> scale(std::vector<double> v, double f) {
  for (double& x : v) x *= f;
  return v;
}
point mirror(point p) {
  return {p.y, p.x, p.label + "@" + std::to_string(find_here().rank())};
}
std::uint64_t checksum(const std::vector<char>& bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}
std::vector<char> echo(std::vector<char> bytes) {
  return bytes;
}
int fail(int code) {
  throw std::runtime_error("failing on purpose with " + std::to_string(code));
}
void bump(int by) {
  g_bumped.fetch_add(by);
}
long bumped() {
  return g_bumped.load();
}
// Calls square on another locality from inside an action (a task that waits on a parcel).
long relay(std::uint32_t to, int x) {
  return grain::async(locality(to), action<&square>{}, x).get() + find_here().rank();
}
void slow_post(int ms, int marker) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  // The next locality gets a post too: in flight while rank 0 is already shutting down.
  if (marker > 0) {
    const auto n = get_num_localities();
    grain::post(locality((find_here().rank() + 1) % n), action<&slow_post>{}, ms, marker - 1);
  }
  g_markers.fetch_add(1);
  if (marker == 0)
    std::printf("grain-test: the last post in flight ran on locality#%u\n", find_here().rank());
}
int markers() {
  return g_markers.load();
}
int nap(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}
// Every locality asks every other one (all-to-all, nested).
long sum_over_all(int depth) {
  if (depth == 0) return find_here().rank();
  std::vector<future<long>> fs;
  for (auto l : find_all_localities())
    fs.push_back(grain::async(l, action<&sum_over_all>{}, depth - 1));
  long s = 0;
  for (auto& f : fs) s += f.get();
  return s;
}

// The process ends as if killed: what a crashed or OOM-killed rank looks like to the others.
int die_here(int after_ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
  std::raise(SIGKILL);
  return 0;
}

long contribute_one(std::int64_t generation) {
  collective_args a;
  a.generation = generation;
  return all_reduce(1L, std::plus<>{}, a).get();
}

namespace {
std::vector<int> cpus_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (::sched_getaffinity(tid, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}
}  // namespace

cpu_binding binding_here() {
  return {cpus_of(0), cpus_of(::getpid())};
}

int defuse(exploding e) {
  return e.value;
}

}  // namespace grain::test::dist
