#pragma once
// Knobs: the runtime parameters policies change while the program runs. A read at a decision
// point is one relaxed atomic load. Every change goes through set(), which clamps to the range,
// snaps integers to the step, and publishes a decision record to the listeners (log, summary,
// tracer): changes are never silent.
#include <atomic>
#include <bit>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace grain {

enum class knob_type { integer, real, enumeration };

// One decision: who changed which knob, from what to what, why, and on which evidence.
struct decision_record {
  std::uint64_t time_ns = 0;  // now_ns() when applied
  std::string rule;           // policy rule, "cli" for --grain:knob, "api" by default
  std::string knob;
  knob_type type = knob_type::real;  // of the knob: readers format values without a lookup
  double old_value = 0;
  double new_value = 0;
  double requested = 0;  // value asked for before clamping
  bool clamped = false;
  std::string reason;
  std::vector<std::pair<std::string, double>> trigger;  // counter values behind the decision
};

class knob {
 public:
  knob(std::string name, knob_type type, double min, double max, double step, double def,
       std::string description, std::vector<std::string> enum_values = {});
  knob(const knob&) = delete;
  knob& operator=(const knob&) = delete;

  const std::string& name() const noexcept { return name_; }
  knob_type type() const noexcept { return type_; }
  double min() const noexcept { return min_.load(std::memory_order_relaxed); }
  double max() const noexcept { return max_.load(std::memory_order_relaxed); }
  double step() const noexcept { return step_; }
  double default_value() const noexcept { return default_.load(std::memory_order_relaxed); }
  const std::string& description() const noexcept { return description_; }
  const std::vector<std::string>& enum_values() const noexcept { return enum_values_; }

  // The current value: one relaxed load. Enumerations read as their index.
  double value() const noexcept {
    return std::bit_cast<double>(bits_.load(std::memory_order_relaxed));
  }
  std::int64_t int_value() const noexcept { return static_cast<std::int64_t>(value()); }
  std::string enum_name() const;  // for enumerations: the name of the current value

  // Clamp (and snap integers to min + k*step), store, notify the change callbacks and the
  // registry's decision listeners. Returns the record that was published. Writers are
  // serialised per knob (value, callbacks and listeners see the changes in one order);
  // a callback may set the same knob again (re-entrant).
  decision_record set(double requested, std::string_view reason, std::string_view rule = "api",
                      std::vector<std::pair<std::string, double>> trigger = {});
  // Enumerations by name; throws std::invalid_argument naming the allowed values.
  decision_record set(std::string_view enum_value, std::string_view reason,
                      std::string_view rule = "api",
                      std::vector<std::pair<std::string, double>> trigger = {});

  // Parse "VALUE" as this knob's type (number or enum name); throws std::invalid_argument.
  double parse(std::string_view text) const;
  // A value as text: integers without decimals, enumerations by name.
  std::string format(double v) const;
  // "int [1, 8] step 1", "double [0, 1000]", "enum {a, b, c}".
  std::string describe_range() const;
  // What set() would store for `requested`, and whether that is a clamp.
  std::pair<double, bool> clamp(double requested) const noexcept;

  // Components that must react to a change (pool sizes) register here; called on the
  // thread that calls set(), after the value is stored.
  void on_change(std::function<void(double old_value, double new_value)> fn);
  // Drop the change callbacks (a component that registered them is going away).
  void clear_callbacks();
  // A new runtime redefines a knob whose range depends on it (pool sizes): new range and
  // default, value reset to the default without a decision record.
  void reset_range(double min, double max, double def);

 private:
  friend class knob_registry;
  std::string name_;
  knob_type type_;
  std::atomic<double> min_, max_;  // atomic: reset_range may run while others list knobs
  double step_;
  std::atomic<double> default_;
  std::string description_;
  std::vector<std::string> enum_values_;
  std::atomic<std::uint64_t> bits_;
  std::recursive_mutex set_mutex_;  // serialises writers; readers never take it
  std::vector<std::function<void(double, double)>> callbacks_;
  class knob_registry* registry_ = nullptr;
};

class knob_registry {
 public:
  // Define a knob; defining an existing name returns the existing knob if the type matches
  // and throws std::invalid_argument otherwise.
  knob& define_int(std::string name, std::int64_t min, std::int64_t max, std::int64_t def,
                   std::string description, std::int64_t step = 1);
  knob& define_double(std::string name, double min, double max, double def,
                      std::string description);
  knob& define_enum(std::string name, std::vector<std::string> values, std::string_view def,
                    std::string description);

  knob* find(std::string_view name) noexcept;
  // Like find, but throws std::out_of_range listing the known knobs.
  knob& at(std::string_view name);
  std::vector<knob*> all();   // sorted by name
  std::string names() const;  // comma-separated, sorted

  // Decision listeners see every record of every knob (log, summary, tracer, policy engine).
  // Returns an id for remove_listener.
  int add_listener(std::function<void(const decision_record&)> fn);
  void remove_listener(int id);
  // All records published so far (bounded: the most recent 100,000 are kept).
  std::vector<decision_record> decisions() const;

  void publish(const decision_record& r);

  // Command-line values (--grain:knob=NAME=VALUE). A defined knob is set now (rule "cli");
  // throws std::invalid_argument for a value that does not parse and std::out_of_range for one
  // outside the range, both naming the range. An undefined name is kept pending: the define_*
  // that creates it later starts from this value (and throws like above when it is invalid).
  void set_initial(std::string_view name, std::string_view text, std::string_view rule = "cli");
  // Names given to set_initial that no knob has claimed yet, sorted.
  std::vector<std::string> pending_initial() const;
  // Forget the pending values (the runtime that received them stops).
  void clear_initial();

 private:
  knob& define(std::unique_ptr<knob> k);
  void apply_initial(knob& k, const std::string& text, std::string_view rule);
  mutable std::mutex mutex_;
  std::deque<std::unique_ptr<knob>> knobs_;
  std::vector<std::pair<int, std::function<void(const decision_record&)>>> listeners_;
  std::deque<decision_record> history_;
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>>
      pending_;  // name, text, rule
  int next_listener_ = 0;
};

// The process-wide registry (exists before and after the runtime).
knob_registry& knobs();

}  // namespace grain
