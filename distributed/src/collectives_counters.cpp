// The /collectives counters (docs/counters.md, docs/collectives.md): generations completed, the
// mean time from a generation's first local contribution to its results (latency), and the
// mean time its first local contribution waited for the last one (the local imbalance the
// two-level scheme lets other work absorb). Averages are over the interval since the last reset.
#include "collectives_counters.hpp"

#include <memory>
#include <string>

#include "interval_ratio_counter.hpp"

namespace grain::distributed {

using instrumentation::counter_info;
using instrumentation::counter_kind;

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
  ids.push_back(
      add_interval_ratio(reg,
                         counter_info{p + "time/average-latency", "ns",
                                      "mean time from a generation's first local contribution "
                                      "to its results",
                                      counter_kind::average},
                         c.latency_ns, c.operations));
  ids.push_back(
      add_interval_ratio(reg,
                         counter_info{p + "time/average-local-wait", "ns",
                                      "mean time a generation's first local contribution waited "
                                      "for its last one",
                                      counter_kind::average},
                         c.local_wait_ns, c.operations));
  return ids;
}

}  // namespace grain::distributed
