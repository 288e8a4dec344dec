#pragma once
// Who is deciding and on what: the rule whose call is in progress, the event that triggered
// it and the counters it read. Every knob change records them. Separate because Lua
// bindings, C++ policies and tuners all decide through it.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grain/instrumentation/listener.hpp"
#include "grain/knob.hpp"

namespace grain::policy {

struct rule;

struct decision_context {
  rule* current = nullptr;  // null: the top-level code of a policy file
  std::string load_name;    // names the decisions of that top-level code
  const instrumentation::app_event* event = nullptr;
  std::vector<std::pair<std::string, double>> reads;

  void note_read(const std::string& name, double v);
  // The rule's name, or the policy file's for top-level code ("policy" when unnamed).
  std::string rule_name() const;
  // Sets the knob, recorded with rule_name() and the reads. With `only_if_changed`, a value
  // the knob already has (after clamping) is no decision and leaves no record.
  decision_record set_knob(knob& k, double requested, std::string_view reason,
                           bool only_if_changed);
};

// `r` decides for the scope of this object; nested calls give the outer rule back.
class acting_as {
 public:
  acting_as(decision_context& d, rule& r) : d_(d), saved_(d.current) { d.current = &r; }
  ~acting_as() { d_.current = saved_; }
  acting_as(const acting_as&) = delete;
  acting_as& operator=(const acting_as&) = delete;

 private:
  decision_context& d_;
  rule* saved_;
};

}  // namespace grain::policy
