#pragma once
// Internals of the policy engine shared by engine.cpp (queue, thread, rules, tuners) and
// lua_api.cpp (the sandboxed Lua state and the grain.* functions).
#include <lua.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "grain/policy/engine.hpp"

namespace grain::policy {

enum class rule_kind { every, on, when, tuner };

// Why the Lua call in progress is being cut: every further instruction raises.
enum class cut_kind { none, budget, time };

struct tuner_state {
  tune_request req;
  std::unique_ptr<tuning::strategy> search;
  std::vector<knob*> knobs;
  std::optional<tuning::point> current;
  std::size_t skip_left = 0;
  std::vector<double> window;
  double last_aggregate = 0;
  bool finished = false;
  std::vector<double> start_values;  // the knobs before the tuner's first change
  std::size_t missing = 0;           // triggers in a row without the metric
  int lua_on_done = LUA_NOREF;       // Lua callback (grain.tune{on_done=...})
};

struct rule {
  int id = 0;
  rule_kind kind = rule_kind::on;
  std::string name, trigger;
  int lua_ref = LUA_NOREF;  // Lua function, or
  cpp_policy cpp;           // a C++ policy
  // every
  std::uint64_t period_ns = 0, next_due = 0;
  // on
  std::string event;
  // when
  std::string counter;
  int op = 0;  // 0 <, 1 <=, 2 >, 3 >=, 4 ==, 5 ~=
  double threshold = 0;
  // tuner
  std::unique_ptr<tuner_state> tuner;
  // bookkeeping
  std::uint64_t calls = 0, errors = 0;
  int consecutive_errors = 0;
  bool disabled = false, removed = false;
  std::string last_error;
};

struct queued {
  enum kind_t { sample, event, command, sync } kind = event;
  instrumentation::app_event ev;
  std::function<void()> fn;
  std::uint64_t sync_ticket = 0;
};

struct engine::impl {
  explicit impl(engine_options o);
  ~impl();

  // ---- Lua (lua_api.cpp) ----
  void open_state();
  void load(std::string_view code, const std::string& chunk, bool is_file);
  // Call the Lua function `ref` with the arguments pushed by `push_args` (returns their
  // count); errors counted against `r`. Returns true on success.
  bool call_lua(rule& r, int ref, const std::function<int(lua_State*)>& push_args);
  void push_event_table(const instrumentation::app_event& e);
  void unref(int ref);
  // Resets the instruction budget and the deadline for a call of Lua code.
  void start_limits();

  // ---- the time limit seen from other threads (engine.cpp) ----
  // A rule call starts and ends (nested calls keep the outer one); returns whether it started.
  bool begin_call(rule& r);
  void end_call();
  // The rule the policy thread has been running for so long past its deadline that it is
  // stuck where the hook cannot cut it (a C function, code with hooks off); empty if none.
  std::string stuck_rule(rule_info* info = nullptr);
  // Waits for the policy thread to end; false when it is stuck or does not end within the
  // bound (it is then abandoned).
  bool wait_thread_end();
  // pump() with the thread: waits until `ticket` is processed, but not for a stuck rule and
  // not beyond a bound. `lk` holds qm.
  void wait_ticket(std::unique_lock<std::mutex>& lk, std::uint64_t ticket);
  std::uint64_t stuck_after_ns() const;

  // ---- rules and inputs (engine.cpp) ----
  int add_rule(std::unique_ptr<rule> r);  // policy thread (or before start)
  // From the application's thread: the rule joins the list on the policy thread.
  int queue_rule(std::unique_ptr<rule> r);
  void remove(int id);
  void run_or_queue(std::function<void()> fn);
  void process(queued& q);
  void process_sample();
  void dispatch_event(const instrumentation::app_event& e);
  void run_due_timers();
  std::uint64_t next_due() const;
  void invoke(rule& r, const instrumentation::app_event* ev,
              const std::function<int(lua_State*)>& push_args);
  // With `disable_why`, the rule is disabled at once (why, for the log).
  void record_error(rule& r, const std::string& msg, const char* disable_why = nullptr);
  void record_success(rule& r);
  void tuner_trigger(rule& r, const instrumentation::app_event* ev);
  void tuner_apply(rule& r, const tuning::point& p, const std::string& reason, bool force);
  void tuner_next(rule& r);
  void tuner_finish(rule& r);
  // Ends a tuner that cannot work (`why`), its knobs back at their values from before it.
  void tuner_fail(rule& r, const std::string& why);
  std::optional<double> tuner_metric(const tuner_state& t, const instrumentation::app_event* ev,
                                     std::string& why);
  void thread_main();
  void drain();

  // Counter lookup in the current snapshot (short names accepted); null when absent.
  const instrumentation::counter_value* find_counter(std::string_view name);
  void note_read(const std::string& name, double v);
  decision_record set_knob(knob& k, double requested, std::string_view reason,
                           bool only_if_changed);

  engine_options opts;
  std::vector<std::string> module_dirs;  // realpath'd

  // Lua state and its limits.
  lua_State* L = nullptr;
  std::atomic<std::size_t> mem_used{0};  // written by the Lua thread only (plain stores)
  std::size_t mem_limit = 0;
  std::uint64_t budget_used = 0;
  cut_kind cut = cut_kind::none;
  std::uint64_t deadline_ns = ~0ull;  // now_ns() past which the call in progress is cut
  int hook_granularity = 1000;
  int msgh_ref = LUA_NOREF;
  std::string last_traceback;

  // Rules (touched by the policy thread only, or by the caller before start).
  std::vector<std::unique_ptr<rule>> rules;
  std::atomic<int> next_id{0};
  // Held while processing; rules() takes it (with a bound: a stuck rule keeps it).
  mutable std::mutex state_m;

  // The call in progress.
  rule* cur_rule = nullptr;
  std::string load_rule_name;  // rule name for decisions made by top-level code
  std::vector<std::pair<std::string, double>> reads;
  const instrumentation::app_event* cur_event = nullptr;

  // Counters: the snapshot being processed and a name index.
  instrumentation::counter_snapshot cur;
  std::uint64_t index_generation = ~0ull;
  std::size_t index_size = 0;
  std::unordered_map<std::string, std::size_t> index;

  // Input queue.
  std::mutex qm;
  std::condition_variable qcv;
  std::deque<queued> queue;
  instrumentation::counter_snapshot slot;  // latest sample not yet processed
  bool sample_queued = false;
  std::uint64_t sync_issued = 0, sync_done = 0;
  std::condition_variable sync_cv;
  bool stopping = false;
  std::atomic<bool> running{false};
  std::atomic<std::uint64_t> dropped{0};
  std::thread th;
  std::atomic<bool> have_clock{false};
  clockid_t cpu_clock{};
  std::uint64_t final_cpu = 0;
  bool started_once = false;
  bool thread_done = false;  // under qm; sync_cv announces it

  // The rule call in progress (begin_call/end_call), for stuck_rule from other threads: the
  // rule cannot be removed before end_call, which takes call_m.
  std::mutex call_m;
  rule* call_rule = nullptr;
  std::uint64_t call_started_ns = 0;
  std::string stuck_reported;  // rule last reported stuck by pump (under qm)
  // The policy thread was left behind in a stuck rule: the impl and its Lua state are never
  // freed (the thread may still use them), and `abandoned_rules` answers rules().
  std::atomic<bool> abandoned{false};
  std::vector<rule_info> abandoned_rules;
};

// A metric that is an event payload field needs an event trigger (not "sample", not a period).
bool tune_metric_fits_trigger(const tune_request& req);

// Lua helpers shared by the two files.
engine::impl* engine_of(lua_State* L) noexcept;
std::string basename_of(std::string_view path);

}  // namespace grain::policy
