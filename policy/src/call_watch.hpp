#pragma once
// The rule call in progress as other threads see it, to tell a call the Lua hook will still
// cut from one stuck where it cannot (inside a C function such as string.find), and the
// verdict once the policy thread is given up on. Separate because it is the one part of the
// rule state other threads read while the policy thread runs.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "grain/policy/engine.hpp"

namespace grain::policy {

struct rule;

class call_watch {
 public:
  explicit call_watch(std::chrono::milliseconds time_limit) : time_limit_(time_limit) {}

  // A rule call starts and ends (nested calls keep the outer one); returns whether it
  // started. The rule cannot be removed before end(), which takes the same lock as stuck().
  bool begin(rule& r);
  void end();
  // How long a call may run before it counts as stuck.
  std::uint64_t stuck_after_ns() const;
  // The rule of a stuck call, with what rules() should report for it in `info`; empty if
  // none.
  std::string stuck(rule_info* info = nullptr) { return running_for(stuck_after_ns(), info); }
  // The same for a call that has run at least `ns`.
  std::string running_for(std::uint64_t ns, rule_info* info = nullptr);

  // The policy thread was left behind in a stuck rule: the impl and its Lua state are never
  // freed (the thread may still use them), and `abandoned_rules` answers rules().
  std::atomic<bool> abandoned{false};
  std::vector<rule_info> abandoned_rules;
  std::string stuck_reported;  // rule last reported stuck by pump (under input_queue::m)

 private:
  std::chrono::milliseconds time_limit_;
  std::mutex m_;
  rule* rule_ = nullptr;
  std::uint64_t started_ns_ = 0;
};

}  // namespace grain::policy
