// The /parcels counters (docs/counters.md): what the parcel port moved, per locality.
#include "parcel_counters.hpp"

#include <functional>
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
                       std::function<std::uint64_t()> read) {
    ids.push_back(
        reg.add_counter(counter_info{p + name, unit, what, counter_kind::monotonic},
                        [read = std::move(read)] { return static_cast<double>(read()); }));
  };
  monotonic("count/sent", "count", "parcels sent to other localities (calls, posts, answers)",
            [&c] { return c.parcels_sent(); });
  monotonic("count/received", "count", "parcels received from other localities",
            [&c] { return c.parcels_received.get(); });
  monotonic("data/sent", "bytes", "bytes of messages sent, headers included",
            [&c] { return c.bytes_sent(); });
  monotonic("data/received", "bytes", "bytes of messages received, headers included",
            [&c] { return c.bytes_received.get(); });
  monotonic("count/messages-sent", "count", "messages sent (one or more parcels each)",
            [&c] { return c.messages_sent(); });
  monotonic("count/messages-received", "count", "messages received",
            [&c] { return c.messages_received.get(); });
  monotonic("count/errors", "count",
            "parcels refused: unknown action, other signature, corrupted or undecodable",
            [&c] { return c.errors.load(); });
  // The mean round trip of calls since the last reset: the baseline is kept here.
  struct baseline {
    std::uint64_t n = 0, ns = 0;
  };
  auto base = std::make_shared<baseline>();
  ids.push_back(reg.add_counter(
      counter_info{p + "time/average-latency", "ns",
                   "mean time from sending a call to its answer's arrival (of one call in 16)",
                   counter_kind::average},
      [&c, base]() -> instrumentation::counter_reading {
        const std::uint64_t n = c.latency_samples.get() - base->n;
        if (n == 0) return {0, false};
        return {static_cast<double>(c.latency_ns.get() - base->ns) / static_cast<double>(n), true};
      },
      [&c, base] {
        base->n = c.latency_samples.get();
        base->ns = c.latency_ns.get();
      }));
  return ids;
}

}  // namespace grain::distributed
