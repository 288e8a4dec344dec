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
  double min() const noexcept { return min_; }
  double max() const noexcept { return max_; }
  double step() const noexcept { return step_; }
  double default_value() const noexcept { return default_; }
  const std::string& description() const noexcept { return description_; }
  const std::vector<std::string>& enum_values() const noexcept { return enum_values_; }

  // The current value: one relaxed load. Enumerations read as their index.
  double value() const noexcept {
    return std::bit_cast<double>(bits_.load(std::memory_order_relaxed));
  }
  std::int64_t int_value() const noexcept { return static_cast<std::int64_t>(value()); }
  std::string enum_name() const;  // for enumerations: the name of the current value

  // Clamp (and snap integers to min + k*step), store, notify the change callbacks and the
  // registry's decision listeners. Returns the record that was published.
  decision_record set(double requested, std::string_view reason, std::string_view rule = "api",
                      std::vector<std::pair<std::string, double>> trigger = {});
  // Enumerations by name; throws std::invalid_argument naming the allowed values.
  decision_record set(std::string_view enum_value, std::string_view reason,
                      std::string_view rule = "api",
                      std::vector<std::pair<std::string, double>> trigger = {});

  // Parse "VALUE" as this knob's type (number or enum name); throws std::invalid_argument.
  double parse(std::string_view text) const;
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
  double min_, max_, step_, default_;
  std::string description_;
  std::vector<std::string> enum_values_;
  std::atomic<std::uint64_t> bits_;
  std::mutex set_mutex_;  // serialises writers; readers never take it
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

 private:
  mutable std::mutex mutex_;
  std::deque<std::unique_ptr<knob>> knobs_;
  std::vector<std::pair<int, std::function<void(const decision_record&)>>> listeners_;
  std::deque<decision_record> history_;
  int next_listener_ = 0;
};

// The process-wide registry (exists before and after the runtime).
knob_registry& knobs();

}  // namespace grain
