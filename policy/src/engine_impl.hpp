#pragma once
// The engine's parts and the functions that tie them together. Each part is a type of its
// own with its own file; this struct owns them and holds the steps that need several:
//   rule_dispatch.cpp  inputs to rules: which rules an input triggers, periodic rules
//   rule_calls.cpp     one call of a rule's function, its errors, disabling
//   engine_loop.cpp    the policy thread, and the waits of other threads on it
//   engine.cpp         the public engine class
#include <lua.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "call_watch.hpp"
#include "counter_view.hpp"
#include "decision_context.hpp"
#include "grain/policy/engine.hpp"
#include "input_queue.hpp"
#include "lua_sandbox.hpp"
#include "module_dirs.hpp"
#include "rule.hpp"

namespace grain::policy {

// The policy thread and its CPU time.
struct policy_thread {
  std::thread th;
  std::atomic<bool> running{false};
  bool started_once = false;
  std::atomic<bool> have_clock{false};
  clockid_t cpu_clock{};
  std::uint64_t final_cpu = 0;
};

struct engine::impl {
  explicit impl(engine_options o);

  // Reads and runs a policy (its top-level code registers rules).
  void load(std::string_view code, const std::string& chunk, bool is_file);

  // ---- rules and the inputs that trigger them (rule_dispatch.cpp) ----
  int add_rule(std::unique_ptr<rule> r);  // policy thread (or before start)
  // From the application's thread: the rule joins the list on the policy thread.
  int queue_rule(std::unique_ptr<rule> r);
  void remove(int id);
  void run_or_queue(std::function<void()> fn);
  void process_sample();
  void dispatch_event(const instrumentation::app_event& e);
  void run_due_timers();
  std::uint64_t next_due() const;
  // The rule's action for one trigger: a function gets the arguments `push_args` pushes, a
  // tuner takes a step with `ev`.
  void fire(rule& r, const instrumentation::app_event* ev, const push_args_fn& push_args);

  // ---- one call (rule_calls.cpp) ----
  // Calls a Lua function for `r` (its function, or a tuner's callback); returns success.
  bool call_lua(rule& r, int ref, const push_args_fn& push_args);
  void call_cpp(rule& r, const cpp_policy& fn);
  // With `disable_why`, the rule is disabled at once (why, for the log).
  void record_error(rule& r, const std::string& msg, const char* disable_why = nullptr);
  void record_success(rule& r);

  // ---- the policy thread (engine_loop.cpp) ----
  void thread_main();
  void process(queued& q);
  void drain();
  // Waits for the policy thread to end; false when it is stuck or does not end within the
  // bound (it is then abandoned). After interrupt() the bound is interrupt_wait.
  bool wait_thread_end();
  // engine::interrupt: how long stop() then waits for a call the hook cannot cut.
  static constexpr std::uint64_t interrupt_wait_ns = 500'000'000;
  std::atomic<bool> interrupted{false};
  // pump() with the thread: waits until `ticket` is processed, but not for a stuck rule and
  // not beyond a bound. `lk` holds inputs.m.
  void wait_ticket(std::unique_lock<std::mutex>& lk, std::uint64_t ticket);

  const engine_options opts;
  module_dirs dirs;
  decision_context decisions;
  counter_view counters;
  // Touched by the policy thread only, or by the caller before start.
  std::vector<std::unique_ptr<rule>> rules;
  std::atomic<int> next_id{0};
  // Held while processing; rules() takes it (with a bound: a stuck rule keeps it).
  mutable std::mutex state_m;
  input_queue inputs;
  call_watch watch;
  policy_thread thread;
  // Last: opened when the parts it refers to exist, closed before they go.
  lua_sandbox lua;
};

}  // namespace grain::policy
