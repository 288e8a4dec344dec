#pragma once
// Work stealing: which workers a worker steals from and in which order. The one file to change
// for a new steal order: its value in steal_mode (the scheduler.steal knob takes each value, in
// order, with the name in steal_mode_names), its victims in order_victims() if they differ,
// and its walk in steal(); then a case in tests/runtime/steal_order_test.cpp and its row in
// docs/lua-api.md ("The runtime's knobs"). Inline: steal() runs whenever a worker is out of work.
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "scheduler.hpp"
#include "wake.hpp"

namespace grain::detail {

// The values of the scheduler.steal knob.
enum class steal_mode : std::int64_t {
  off = 0,         // no stealing: a worker runs its own and its pool's injected work only
  near_first = 1,  // every worker of the pool, those of the same NUMA domain first (default)
  near_only = 2,   // only workers of the same NUMA domain (work stays near its memory)
};
inline constexpr std::array<const char*, 3> steal_mode_names = {"off", "near-first", "near-only"};
inline constexpr steal_mode default_steal_mode = steal_mode::near_first;

inline steal_mode scheduler_knobs::steal() const noexcept {
  // Before define() (a scheduler being built): the default.
  return steal_ ? static_cast<steal_mode>(steal_->int_value()) : default_steal_mode;
}

// Every other worker, those of w's NUMA domain first; w->near_victims counts those. steal()
// skips the victims serving another pool at the time (pool.<name>.share moves workers).
inline void order_victims(worker& w, const std::vector<std::unique_ptr<worker>>& all,
                          const std::vector<pu_info>& pus) {
  std::vector<worker*> near, far;
  for (auto& vp : all) {
    worker* v = vp.get();
    if (v == &w) continue;
    (pus[v->pu].numa == pus[w.pu].numa ? near : far).push_back(v);
  }
  w.near_victims = near.size();
  w.victims = std::move(near);
  w.victims.insert(w.victims.end(), far.begin(), far.end());
}

inline std::uint64_t xorshift(std::uint64_t& s) noexcept {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// A victim that moved to this worker's pool just before we read pool_now may still hold work of
// its old pool (and the other way round): such work goes to its own pool's injection queue.
inline bool stolen_from_other_pool(worker* w, task_base* t, fiber* f) {
  const unsigned mine = w->home->index;
  const auto theirs = static_cast<unsigned>(t ? t->pool : f->pool);
  if (theirs == mine) return false;
  if (t)
    inject_task(w->sched->pool_at(theirs), t);
  else
    inject_fiber(w->sched->pool_at(theirs), f);
  return true;
}

// One pass over the victims for priorities prio_lo..prio_hi (ready user threads before task
// descriptions); true with t or f set when something was stolen.
inline bool steal(worker* w, steal_mode mode, int prio_lo, int prio_hi, task_base*& t, fiber*& f) {
  if (mode == steal_mode::off) return false;
  const auto n = mode == steal_mode::near_only ? w->near_victims : w->victims.size();
  if (n == 0) return false;
  const unsigned mine = w->home->index;
  // Random start inside the near (same NUMA) group would need its size; a random rotation of
  // the whole list keeps near victims first in expectation and costs nothing.
  std::size_t start = xorshift(w->rng) % n;
  for (int prio = prio_lo; prio <= prio_hi; ++prio) {
    for (std::size_t k = 0; k < n; ++k) {
      worker* v = w->victims[(start + k) % n];
      if (v->pool_now.load(std::memory_order_acquire) != mine)
        continue;  // stealing stays in a pool
      std::uint64_t membarriers = 0;
      const bool got =
          (f = v->pending[prio].steal(&membarriers)) || (t = v->staged[prio].steal(&membarriers));
      if (GRAIN_UNLIKELY(membarriers != 0)) w->stats->heavy_steals.add(membarriers);
      if (got) {
        if (stolen_from_other_pool(w, t, f)) {
          t = nullptr;
          f = nullptr;
          continue;
        }
        w->stats->stolen_to.inc();
        v->stats->stolen_from.v.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    }
  }
  return false;
}

}  // namespace grain::detail
