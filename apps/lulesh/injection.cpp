#include "injection.hpp"

namespace lulesh {

injector::injector(const options& o, int rank, int ranks)
    : on_(o.inject), spec_(o.load), rank_(rank) {
  spec_.ranks = static_cast<std::uint32_t>(ranks);
  if (!on_) return;
  if (o.iters_per_us > 0)
    load_injection::set_iterations_per_us(o.iters_per_us);
  else
    load_injection::calibrate();
}

void injector::set_partitions(index_t parts) noexcept {
  parts_ = parts;
  spec_.tasks_per_rank = static_cast<std::uint32_t>(injected_loops * parts);
}

void injector::operator()(loop l, index_t cycle, index_t p) const {
  if (!on_) return;
  const auto task = static_cast<std::uint32_t>(static_cast<index_t>(l) * parts_ + p);
  const double u = load_injection::units(spec_, static_cast<std::uint64_t>(cycle),
                                         static_cast<std::uint32_t>(rank_), task);
  load_injection::spin_us(u * spec_.unit_us);
}

}  // namespace lulesh
