#pragma once
// Actions the distributed tests call on other localities.
#include <atomic>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "grain/grain.hpp"

namespace grain::test::dist {

struct point {
  double x = 0, y = 0;
  std::string label;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(x, y, label);
  }
};

int square(int x);
std::uint32_t where();
std::string shout(const std::string& s);
std::vector<double> scale(std::vector<double> v, double f);
point mirror(point p);
std::uint64_t checksum(const std::vector<char>& bytes);
std::vector<char> echo(std::vector<char> bytes);
int fail(int code);
void bump(int by);
long bumped();
long relay(std::uint32_t to, int x);
void slow_post(int ms, int marker);
int markers();
// Sleeps `ms` milliseconds and returns them (a call of known duration).
int nap(int ms);
long sum_over_all(int depth);
int die_here(int after_ms);
// The CPUs the calling worker may run on, and those of the process's main thread.
struct cpu_binding {
  std::vector<int> worker, process;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(worker, process);
  }
};
cpu_binding binding_here();
// A value whose serialisation throws when it is negative (the sender's error at the call).
// Not trivially copyable (the name), so it goes through its serialize(), not a memcpy.
struct exploding {
  int value = 0;
  std::string name = "exploding";
  template <class Archive>
  void serialize(Archive& ar) {
    if (value < 0) throw std::runtime_error("exploding: cannot serialise a negative value");
    ar(value, name);
  }
};
int defuse(exploding e);
// This locality's share (1) of an all_reduce of generation `generation`; its sum.
long contribute_one(std::int64_t generation);

}  // namespace grain::test::dist
