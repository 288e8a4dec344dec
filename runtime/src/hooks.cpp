// The hook table and the one way tools chain into it (hook_chain): instrumentation (PAPI, the
// trace) and tests all install through it, so "who calls whom" has one implementation.
#include <mutex>

#include "hooks_internal.hpp"

namespace grain {
namespace detail {
runtime_hooks g_hooks;
}

runtime_hooks& hooks() noexcept {
  return detail::g_hooks;
}

namespace {

std::mutex g_install_mutex;

// Calls f(&runtime_hooks::x) for every hook.
template <class F>
void for_each_hook(F&& f) {
  f(&runtime_hooks::phase_begin);
  f(&runtime_hooks::phase_end);
  f(&runtime_hooks::idle_begin);
  f(&runtime_hooks::idle_end);
  f(&runtime_hooks::worker_start);
  f(&runtime_hooks::worker_stop);
}
static_assert(sizeof(runtime_hooks) == 6 * sizeof(void (*)()),
              "a new hook: add it to for_each_hook");

bool table_points_at(const runtime_hooks& ours) {
  bool all = true;
  for_each_hook([&](auto member) {
    if (ours.*member && detail::g_hooks.*member != ours.*member) all = false;
  });
  return all;
}

}  // namespace

void hook_chain::install() {
  std::lock_guard lk(g_install_mutex);
  if (installed_) return;
  for_each_hook([&](auto member) {
    if (!(ours_.*member)) return;
    // The table can hold ours although we are not installed: someone saved it while we were
    // and put it back after we left. prev is still what was under ours then; taking ours as
    // prev would make them call themselves.
    if (detail::g_hooks.*member != ours_.*member) prev_.*member = detail::g_hooks.*member;
    detail::g_hooks.*member = ours_.*member;
  });
  installed_ = true;
}

bool hook_chain::uninstall() {
  std::lock_guard lk(g_install_mutex);
  if (!installed_) return true;
  if (!table_points_at(ours_)) return false;
  for_each_hook([&](auto member) {
    if (ours_.*member) detail::g_hooks.*member = prev_.*member;
  });
  installed_ = false;
  return true;
}

bool hook_chain::installed() const {
  std::lock_guard lk(g_install_mutex);
  return installed_;
}

}  // namespace grain
