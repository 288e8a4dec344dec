// The /collectives counters (docs/counters.md, docs/collectives.md): generations completed, the
// mean time from a generation's first local contribution to its results (latency), and the
// mean time its first local contribution waited for the last one (the local imbalance the
// two-level scheme lets other work absorb). Averages are over the interval since the last reset.
#include "collectives_counters.hpp"

#include <memory>
#include <string>

namespace grain::distributed {

namespace {

using instrumentation::counter_info;
using instrumentation::counter_kind;
using instrumentation::counter_reading;
using counter = std::atomic<std::uint64_t>;

int add_mean(instrumentation::counter_registry& reg, counter_info info, const counter& sum,
             const counter& n) {
  struct baseline {
    std::uint64_t sum = 0, n = 0;
  };
  auto base = std::make_shared<baseline>();
  return reg.add_counter(
      std::move(info),
      [&sum, &n, base]() -> counter_reading {
        const std::uint64_t d = n.load() - base->n;
        if (d == 0) return {0, false};
        return {static_cast<double>(sum.load() - base->sum) / static_cast<double>(d), true};
      },
      [&sum, &n, base] {
        base->sum = sum.load();
        base->n = n.load();
      });
}

}  // namespace

std::vector<int> register_collectives_counters(instrumentation::counter_registry& reg,
                                               const collectives_engine& engine) {
  const std::string p = "/collectives{locality#" + std::to_string(engine.rank()) + "}/";
  const collective_counts& c = engine.counts();
  std::vector<int> ids;
  ids.push_back(reg.add_counter(
      counter_info{p + "count/operations", "count",
                   "collective generations completed on this locality (failed ones included)",
                   counter_kind::monotonic},
      [&c] { return static_cast<double>(c.operations.load()); }));
  ids.push_back(reg.add_counter(
      counter_info{p + "count/errors", "count", "collective generations that failed here",
                   counter_kind::monotonic},
      [&c] { return static_cast<double>(c.errors.load()); }));
  ids.push_back(
      reg.add_counter(counter_info{p + "count/in-flight", "count",
                                   "collective operations started on the network and not finished",
                                   counter_kind::gauge},
                      [&c] { return static_cast<double>(c.in_flight.load()); }));
  ids.push_back(add_mean(reg,
                         counter_info{p + "time/average-latency", "ns",
                                      "mean time from a generation's first local contribution "
                                      "to its results",
                                      counter_kind::average},
                         c.latency_ns, c.operations));
  ids.push_back(add_mean(reg,
                         counter_info{p + "time/average-local-wait", "ns",
                                      "mean time a generation's first local contribution waited "
                                      "for its last one",
                                      counter_kind::average},
                         c.local_wait_ns, c.operations));
  return ids;
}

}  // namespace grain::distributed
