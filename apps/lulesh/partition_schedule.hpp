#pragma once
// The partition size each cycle runs with, the same for every domain of a locality: their
// partitions meet in one all_reduce per cycle whose count they must agree on, and each
// domain's driver plans its cycles on its own, so a knob read by each would let a change
// fall between two domains' cycles. The first domain to plan a cycle reads the knob; the
// others take its answer.
#include <cstddef>
#include <map>
#include <mutex>

#include "domain.hpp"

namespace grain {
class knob;
}

namespace lulesh {

class partition_schedule {
 public:
  // `fallback`: the size while the knob says 0 (automatic); `domains`: how many ask per cycle.
  partition_schedule(grain::knob& k, index_t fallback, std::size_t domains);

  // Elements per partition for `cycle` (each domain asks once per cycle, cycles in order).
  index_t for_cycle(index_t cycle);
  std::size_t domains() const noexcept { return domains_; }

 private:
  struct answer {
    index_t chunk = 0;
    std::size_t asked = 0;
  };
  grain::knob& knob_;
  const index_t fallback_;
  const std::size_t domains_;
  std::mutex m_;
  std::map<index_t, answer> cycles_;  // only cycles some domain has not asked about yet
};

}  // namespace lulesh
