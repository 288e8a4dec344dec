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
    if (ours.*member && detail::hook(member) != ours.*member) all = false;
  });
  return all;
}

}  // namespace

namespace detail {

runtime_hooks load_hooks() noexcept {
  runtime_hooks h;
  for_each_hook([&](auto member) { h.*member = hook(member); });
  return h;
}

void store_hooks(const runtime_hooks& h) noexcept {
  for_each_hook([&](auto member) { set_hook(member, h.*member); });
}

}  // namespace detail

void hook_chain::install() {
  std::lock_guard lk(g_install_mutex);
  if (installed_) return;
  for_each_hook([&](auto member) {
    if (!(ours_.*member)) return;
    // The table can hold ours although we are not installed: someone saved it while we were
    // and put it back after we left. prev is still what was under ours then; taking ours as
    // prev would make them call themselves.
    const auto current = detail::hook(member);
    if (current != ours_.*member)
      std::atomic_ref(prev_.*member).store(current, std::memory_order_relaxed);
    detail::set_hook(member, ours_.*member);
  });
  installed_ = true;
}

bool hook_chain::uninstall() {
  std::lock_guard lk(g_install_mutex);
  if (!installed_) return true;
  if (!table_points_at(ours_)) return false;
  for_each_hook([&](auto member) {
    if (ours_.*member) detail::set_hook(member, prev_.*member);
  });
  installed_ = false;
  return true;
}

bool hook_chain::installed() const {
  std::lock_guard lk(g_install_mutex);
  return installed_;
}

}  // namespace grain
