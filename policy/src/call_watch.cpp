// Stuck-call detection for stop(), pump() and rules() on other threads.
#include "call_watch.hpp"

#include <algorithm>

#include "grain/clock.hpp"
#include "rule.hpp"

namespace grain::policy {

bool call_watch::begin(rule& r) {
  std::lock_guard lk(m_);
  if (rule_) return false;
  rule_ = &r;
  started_ns_ = now_ns();
  return true;
}

void call_watch::end() {
  std::lock_guard lk(m_);
  rule_ = nullptr;
}

std::uint64_t call_watch::stuck_after_ns() const {
  // The hook cuts Lua code at the deadline; a call still running a whole limit later (at
  // least 200 ms, for a loaded machine) is in a place the hook does not reach.
  const auto limit = static_cast<std::uint64_t>(time_limit_.count()) * 1'000'000ull;
  return limit + std::max<std::uint64_t>(limit, 200'000'000ull);
}

std::string call_watch::running_for(std::uint64_t ns, rule_info* info) {
  std::lock_guard lk(m_);
  if (!rule_ || now_ns() - started_ns_ < ns) return {};
  if (info) {
    info->name = rule_->info.name;
    info->trigger = rule_->info.trigger;
    info->calls = rule_->info.calls;
    info->errors = rule_->info.errors + 1;
    info->consecutive_errors = rule_->info.consecutive_errors + 1;
    info->disabled = true;
  }
  return rule_->info.name;
}

}  // namespace grain::policy
