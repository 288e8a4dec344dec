// Definitions of the knobs the scheduler reads (scheduler_knobs.hpp).
#include "scheduler_knobs.hpp"

#include <cstdint>
#include <string>

#include "scheduler.hpp"
#include "steal_order.hpp"

namespace grain::detail {

void scheduler_knobs::define() {
  std::string values;
  for (std::size_t i = 0; i < steal_mode_names.size(); ++i)
    values += (i ? ", " : "") + std::to_string(i) + " " + steal_mode_names[i];
  steal_ = &knobs().define_int("scheduler.steal", 0,
                               static_cast<std::int64_t>(steal_mode_names.size()) - 1,
                               static_cast<std::int64_t>(default_steal_mode),
                               "how the workers of a pool steal from each other: " + values);
}

knob& define_pool_workers_knob(pool& p) {
  const auto n = static_cast<std::int64_t>(p.workers.size());
  knob& k = knobs().define_int(
      "pool." + p.name + ".workers", 1, n, n,
      "active workers of pool '" + p.name + "' (elastic: workers above it sleep)");
  // A later runtime in the same process may have another pool size: start from it.
  k.clear_callbacks();
  k.reset_range(1, static_cast<double>(n), static_cast<double>(n));
  p.workers_knob = &k;
  return k;
}

knob& define_pool_share_knob(pool& p, const pool& default_pool) {
  const auto n = static_cast<std::int64_t>(p.workers.size());
  const auto max = static_cast<std::int64_t>(p.workers.size() + default_pool.workers.size()) - 1;
  knob& k = knobs().define_int("pool." + p.name + ".share", 1, max, n,
                               "workers serving pool '" + p.name +
                                   "', moved to and from 'default' while running (each keeps one)");
  k.clear_callbacks();
  k.reset_range(1, static_cast<double>(max), static_cast<double>(n));
  p.share_knob = &k;
  return k;
}

}  // namespace grain::detail
