// The deciding rule and its reads, recorded with every knob change.
#include "decision_context.hpp"

#include "rule.hpp"

namespace grain::policy {

void decision_context::note_read(const std::string& name, double v) {
  for (auto& [n, x] : reads)
    if (n == name) {
      x = v;
      return;
    }
  if (reads.size() < 32) reads.emplace_back(name, v);
}

std::string decision_context::rule_name() const {
  if (current) return current->info.name;
  return load_name.empty() ? std::string("policy") : load_name;
}

decision_record decision_context::set_knob(knob& k, double requested, std::string_view reason,
                                           bool only_if_changed) {
  auto [v, clamped] = k.clamp(requested);
  if (only_if_changed && !clamped && v == k.value()) {
    decision_record r;
    r.knob = k.name();
    r.type = k.type();
    r.old_value = r.new_value = r.requested = v;
    return r;  // nothing changes: no record
  }
  return k.set(requested, reason, rule_name(), reads);
}

}  // namespace grain::policy
