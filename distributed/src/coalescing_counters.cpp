// The /coalescing counters (coalescing_counters.hpp). Averages are over the interval since the
// last reset: each keeps its baseline here.
#include "coalescing_counters.hpp"

#include <memory>

#include "interval_ratio_counter.hpp"

namespace grain::distributed {

using instrumentation::counter_info;
using instrumentation::counter_kind;

std::vector<int> register_coalescing_counters(instrumentation::counter_registry& reg,
                                              std::uint32_t rank, const std::string& action,
                                              const coalescing_stats& s) {
  const std::string p = "/coalescing{action#" + action + "/locality#" + std::to_string(rank) + "}/";
  std::vector<int> ids;
  ids.push_back(reg.add_counter(
      counter_info{p + "count/parcels", "count", "parcels of this action sent, coalesced or not",
                   counter_kind::monotonic},
      [&s] { return static_cast<double>(s.parcels()); }));
  ids.push_back(reg.add_counter(
      counter_info{p + "count/messages", "count", "messages that carried this action's parcels",
                   counter_kind::monotonic},
      [&s] { return static_cast<double>(s.messages.load()); }));
  ids.push_back(add_interval_ratio(
      reg,
      counter_info{p + "count/average-parcels-per-message", "count",
                   "parcels / messages since the last reset", counter_kind::average},
      [&s] { return s.parcels(); }, [&s] { return s.messages.load(); }));
  ids.push_back(add_interval_ratio(
      reg,
      counter_info{p + "time/average-parcel-arrival", "ns",
                   "mean time between two parcels of this action (one "
                   "destination)",
                   counter_kind::average},
      [&s] { return s.gap_ns(); }, [&s] { return s.gaps(); }));
  ids.push_back(instrumentation::add_histogram(
      reg,
      counter_info{p + "time/parcel-arrival-histogram", "ns",
                   "time between two parcels of this action: 20 buckets over [0, 1 ms)",
                   counter_kind::histogram},
      s.gap_histogram));
  return ids;
}

std::vector<int> register_timer_counters(instrumentation::counter_registry& reg, std::uint32_t rank,
                                         const timer_stats& t) {
  const std::string p = "/coalescing{locality#" + std::to_string(rank) + "/total}/";
  std::vector<int> ids;
  ids.push_back(add_interval_ratio(
      reg,
      counter_info{p + "time/timer-lateness", "ns",
                   "mean delay of a timer flush after its deadline", counter_kind::average},
      t.late_ns, t.flushes));
  ids.push_back(
      reg.add_counter(counter_info{p + "count/timer-flushes", "count",
                                   "queues sent by the flush timer", counter_kind::monotonic},
                      [&t] { return static_cast<double>(t.flushes.load()); }));
  return ids;
}

}  // namespace grain::distributed
