#include "partition_schedule.hpp"

#include "grain/grain.hpp"

namespace lulesh {

partition_schedule::partition_schedule(grain::knob& k, index_t fallback, std::size_t domains)
    : knob_(k), fallback_(fallback), domains_(domains == 0 ? 1 : domains) {}

index_t partition_schedule::for_cycle(index_t cycle) {
  std::lock_guard lk(m_);
  auto [it, first] = cycles_.try_emplace(cycle);
  if (first) {
    const auto k = knob_.int_value();
    it->second.chunk = static_cast<index_t>(k > 0 ? k : fallback_);
  }
  const index_t chunk = it->second.chunk;
  if (++it->second.asked == domains_) cycles_.erase(it);
  return chunk;
}

}  // namespace lulesh
