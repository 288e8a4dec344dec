#pragma once
// The knobs the scheduler reads while it runs (docs/lua-api.md, "The runtime's knobs"). A new
// knob read by the scheduler is defined in scheduler_knobs.cpp and gets its reader here, so
// the worker side never looks a knob up by name. Separate from the scheduler's construction
// because a policy changes these while the loop runs: each read here is one relaxed load.
#include <cstdint>

#include "grain/knob.hpp"

namespace grain::detail {

struct pool;
enum class steal_mode : std::int64_t;

class scheduler_knobs {
 public:
  void define();  // the scheduler's own knobs (scheduler.*)

  // scheduler.steal: how the workers of a pool steal from each other (defined inline in
  // steal_order.hpp, beside the modes).
  steal_mode steal() const noexcept;

 private:
  knob* steal_ = nullptr;
};

// pool.<name>.workers: the pool's active-worker target, read by its workers as
// pool::active_target (the owner of the runtime applies changes: set_active_workers).
knob& define_pool_workers_knob(pool& p);

// pool.<name>.share, for each pool but the default one: how many workers serve it, the rest of
// its and the default pool's workers serving the default pool (scheduler::set_pool_share moves
// them; the owner of the runtime applies changes).
knob& define_pool_share_knob(pool& p, const pool& default_pool);

}  // namespace grain::detail
