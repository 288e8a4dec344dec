// The /parcels counters (docs/counters.md): what the parcel port moved, per locality.
#include "parcel_counters.hpp"

#include <string>

namespace grain::distributed {

std::vector<int> register_parcel_counters(instrumentation::counter_registry& reg,
                                          const parcelport& port) {
  using instrumentation::counter_info;
  using instrumentation::counter_kind;
  const std::string p = "/parcels{locality#" + std::to_string(port.rank()) + "/total}/";
  const parcel_counts& c = port.counts();
  std::vector<int> ids;
  auto monotonic = [&](const std::string& name, const char* unit, const char* what,
                       const std::atomic<std::uint64_t>& v) {
    ids.push_back(reg.add_counter(counter_info{p + name, unit, what, counter_kind::monotonic},
                                  [&v] { return static_cast<double>(v.load()); }));
  };
  monotonic("count/sent", "count", "parcels sent to other localities (calls, posts, answers)",
            c.parcels_sent);
  monotonic("count/received", "count", "parcels received from other localities",
            c.parcels_received);
  monotonic("data/sent", "bytes", "bytes of messages sent, headers included", c.bytes_sent);
  monotonic("data/received", "bytes", "bytes of messages received, headers included",
            c.bytes_received);
  monotonic("count/messages-sent", "count", "messages sent (one or more parcels each)",
            c.messages_sent);
  monotonic("count/messages-received", "count", "messages received", c.messages_received);
  monotonic("count/errors", "count",
            "parcels refused: unknown action, other signature, corrupted or undecodable", c.errors);
  // The mean round trip of calls since the last reset: the baseline is kept here.
  struct baseline {
    std::uint64_t n = 0, ns = 0;
  };
  auto base = std::make_shared<baseline>();
  ids.push_back(reg.add_counter(
      counter_info{p + "time/average-latency", "ns",
                   "mean time from sending a call to its answer's arrival", counter_kind::average},
      [&c, base]() -> instrumentation::counter_reading {
        const std::uint64_t n = c.calls_answered.load() - base->n;
        if (n == 0) return {0, false};
        return {static_cast<double>(c.latency_ns.load() - base->ns) / static_cast<double>(n), true};
      },
      [&c, base] {
        base->n = c.calls_answered.load();
        base->ns = c.latency_ns.load();
      }));
  return ids;
}

}  // namespace grain::distributed
