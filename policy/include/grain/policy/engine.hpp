#pragma once
// The policy engine: one sandboxed Lua 5.4 state driven by one policy thread. Rules (Lua
// functions registered with grain.every / grain.on / grain.when / grain.tune, and C++
// policies) run only on that thread, never on workers. Inputs — counter snapshots from the
// sampler and application events — arrive on other threads through feed_sample/feed_event
// (or the instrumentation listener interface), are queued and processed on the policy thread.
//
// Tests and benchmarks can drive an engine without its thread: load policies, feed inputs,
// then call pump() to process them on the calling thread. See docs/lua-api.md.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "grain/instrumentation/listener.hpp"
#include "grain/knob.hpp"
#include "grain/policy/tuning.hpp"

namespace grain::policy {

// A policy file that does not compile or whose top-level code fails: the message starts with
// file:line.
class policy_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct engine_options {
  std::uint64_t instruction_budget = 1'000'000;  // Lua VM instructions per rule call
  std::size_t memory_limit = 64u << 20;          // bytes the Lua state may allocate
  // Wall-clock limit of one rule call: Lua code past it is cut (and the rule disabled); a
  // call stuck where Lua cannot cut it (inside one C function such as string.find) is not
  // waited for: after twice the limit, stop() leaves the policy thread behind and
  // pump()/settle() return.
  std::chrono::milliseconds time_limit{1000};
  // Directories `require`, `dofile` and `loadfile` may read from. Empty: the policies-lua/
  // folder of the source tree and of the installation. load_file adds the policy file's own
  // directory.
  std::vector<std::string> module_dirs;
  bool add_policy_dirs = true;  // load_file: also search the policy file's directory
  int max_consecutive_errors = 3;
  std::size_t max_queued_events = 10000;  // further events are dropped (and counted)
};

struct rule_info {
  std::string name;     // "throttle.lua:12" or the name given
  std::string trigger;  // "every 10 ms", "on iteration", "when /threads/idle-rate > 0.5", ...
  std::uint64_t calls = 0, errors = 0;
  int consecutive_errors = 0;
  bool disabled = false;
  std::string last_error;
};

// What a C++ policy sees during one call.
class policy_context {
 public:
  virtual ~policy_context() = default;
  // A counter of the latest snapshot (short names like /threads/idle-rate work); nullopt when
  // absent or unavailable. Every read is kept as the trigger of this call's decisions.
  virtual std::optional<double> counter(std::string_view name) = 0;
  // Counters matching a pattern ('*' wildcards), available ones only.
  virtual std::vector<std::pair<std::string, double>> counters(std::string_view pattern) = 0;
  // The event that triggered this call (null for periodic and sample calls).
  virtual const instrumentation::app_event* event() const = 0;
  // Set a knob: clamped, recorded with rule = this policy's name and the counters read so far.
  // Throws std::out_of_range naming the known knobs for an unknown name.
  virtual decision_record set(std::string_view knob, double value, std::string_view reason) = 0;
  virtual double get(std::string_view knob) = 0;
  virtual const std::string& rule() const = 0;
};

using cpp_policy = std::function<void(policy_context&)>;

// A tuning request (grain.tune in Lua). The metric is a counter ("/app/iteration-time") read
// from the latest snapshot, or a payload field of the trigger event ("duration_ns").
struct tune_request {
  std::string name;                           // rule name in decision records; default "tune"
  std::vector<tuning::parameter> parameters;  // name = knob name; from_knob() gives defaults
  std::string metric;
  bool maximize = false;
  std::string strategy = "nelder_mead";
  // "sample" (every snapshot), an event name ("iteration"), or "" with period set.
  std::string trigger = "sample";
  std::chrono::milliseconds period{0};
  std::size_t window = 3;  // metric values aggregated per point
  std::size_t skip = 1;    // triggers ignored after each change (they straddle it)
  bool median = true;      // false: mean
  tuning::strategy_options options;
  // Called on the policy thread when the search ends (after the best point is applied).
  std::function<void(const std::vector<std::pair<std::string, double>>& best, double metric,
                     bool converged)>
      on_done;
};

class engine : public instrumentation::listener {
 public:
  explicit engine(engine_options opts = {});
  ~engine() override;
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  // Load a policy (runs its top-level code, which registers rules). Throws policy_error with
  // "file:line: message" on a syntax or run-time error. Call before start().
  void load_file(const std::string& path);
  void load_string(std::string_view code, std::string_view chunk_name = "policy");

  // C++ policies and tuning requests; any time (queued to the policy thread when running).
  // Return ids for remove_rule.
  int add_policy(std::string event, cpp_policy fn, std::string name = "");
  int add_periodic_policy(std::chrono::milliseconds period, cpp_policy fn, std::string name = "");
  int add_tuner(tune_request r);
  void remove_rule(int id);

  // Start the policy thread; it delivers the "start" event (payload: workers) first.
  void start(double workers = 0);
  // Deliver "stop", process what is queued, end the thread. Idempotent.
  void stop();
  // The program is ending on a signal: from any thread, before stop(). The rule call in
  // progress is cut at its next hook check (a few hundred Lua instructions), whatever the
  // budget and the time limit, and so is every later one; stop() then waits at most 0.5 s for
  // a call the hook cannot reach (inside a C function) before it abandons the thread.
  void interrupt() noexcept;
  bool running() const noexcept;

  // Inputs, from any thread.
  void feed_sample(const instrumentation::counter_snapshot& s);
  void feed_event(const instrumentation::app_event& e);
  void on_sample(const instrumentation::counter_snapshot& s) override { feed_sample(s); }
  void on_event(const instrumentation::app_event& e) override { feed_event(e); }
  void settle() override { pump(); }

  // Without the thread: process the queued inputs and the periodic rules that are due, on the
  // calling thread. With the thread: wait until what was queued before this call is processed.
  void pump();
  // Run every periodic rule now regardless of its schedule (benchmarks, tests; no thread).
  void run_periodic_now();

  std::vector<rule_info> rules() const;
  std::uint64_t dropped_events() const noexcept;
  // CPU time the policy thread used so far (0 without the thread).
  std::uint64_t thread_cpu_ns() const noexcept;
  // Bytes the Lua state holds now.
  std::size_t lua_memory() const noexcept;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

// The engine of the running runtime (null when none runs with the policy extension).
engine* current_engine() noexcept;

}  // namespace grain::policy
