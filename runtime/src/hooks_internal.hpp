#pragma once
// The hook table itself, read directly on the hot path. Tools install and remove their hooks
// while workers run (a trace that stops before the workers are joined), so every slot is read
// and written as a relaxed atomic: on x86 the same single mov as a plain access, and the data
// race the sanitizers would report is gone.
#include <atomic>

#include "grain/ext/hooks.hpp"

namespace grain::detail {

extern runtime_hooks g_hooks;

// The current value of one slot: `if (auto h = hook(&runtime_hooks::phase_end)) h(...);`
template <class F>
inline F hook(F runtime_hooks::*slot) noexcept {
  return std::atomic_ref<F>(g_hooks.*slot).load(std::memory_order_relaxed);
}

template <class F>
inline void set_hook(F runtime_hooks::*slot, F value) noexcept {
  std::atomic_ref<F>(g_hooks.*slot).store(value, std::memory_order_relaxed);
}

// The whole table, slot by slot (for saving and restoring it around a calibration).
runtime_hooks load_hooks() noexcept;
void store_hooks(const runtime_hooks& h) noexcept;

}  // namespace grain::detail
