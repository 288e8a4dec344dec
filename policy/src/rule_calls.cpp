// One call of a rule's function, Lua or C++: under the call watch, with the rule as the one
// deciding, its failure counted and the rule disabled when it keeps failing or runs past
// the time limit. Separate from the dispatch: here is what happens to a call, there is which
// calls happen.
#include <spdlog/spdlog.h>

#include "engine_impl.hpp"
#include "grain/instrumentation/counters.hpp"

namespace grain::policy {

namespace {

// What a C++ policy sees of the engine during its call.
class cpp_context final : public policy_context {
 public:
  cpp_context(engine::impl& e, const std::string& rule_name) : e_(e), rule_name_(rule_name) {}

  std::optional<double> counter(std::string_view name) override {
    auto* c = e_.counters.find(name);
    if (!c || !c->available) return std::nullopt;
    e_.decisions.note_read(c->name, c->value);
    return c->value;
  }
  std::vector<std::pair<std::string, double>> counters(std::string_view pattern) override {
    instrumentation::counter_pattern p(pattern);
    std::vector<std::pair<std::string, double>> out;
    for (auto& c : e_.counters.snapshot().values)
      if (c.available && p.matches(std::string_view(c.name))) {
        e_.decisions.note_read(c.name, c.value);
        out.emplace_back(c.name, c.value);
      }
    return out;
  }
  const instrumentation::app_event* event() const override { return e_.decisions.event; }
  decision_record set(std::string_view knob, double value, std::string_view reason) override {
    return e_.decisions.set_knob(knobs().at(knob), value, reason, true);
  }
  double get(std::string_view knob) override { return knobs().at(knob).value(); }
  const std::string& rule() const override { return rule_name_; }

 private:
  engine::impl& e_;
  const std::string& rule_name_;
};

}  // namespace

bool engine::impl::call_lua(rule& r, int ref, const push_args_fn& push_args) {
  const bool outer = watch.begin(r);
  std::optional<std::string> err;
  {
    acting_as as(decisions, r);
    err = lua.call(ref, push_args);
  }
  if (outer) watch.end();
  if (!err) return true;
  if (lua.cut() == cut_kind::stop) {
    // Not the rule's fault: the program is ending (engine::interrupt).
    spdlog::info("grain: policy rule '{}' cut short: the program is ending on a signal",
                 r.info.name);
    return false;
  }
  // A rule that ran for a whole time limit would hold up every other rule each time.
  record_error(r, *err, lua.cut() == cut_kind::time ? "it ran past the time limit" : nullptr);
  return false;
}

void engine::impl::call_cpp(rule& r, const cpp_policy& fn) {
  cpp_context c(*this, r.info.name);
  acting_as as(decisions, r);
  const bool outer = watch.begin(r);
  try {
    fn(c);
    if (outer) watch.end();
    record_success(r);
  } catch (const std::exception& ex) {
    if (outer) watch.end();
    record_error(r, ex.what());
  } catch (...) {
    if (outer) watch.end();
    record_error(r, "unknown exception");
  }
}

void engine::impl::record_error(rule& r, const std::string& msg, const char* disable_why) {
  rule_info& i = r.info;
  ++i.errors;
  ++i.consecutive_errors;
  i.last_error = msg;
  spdlog::error("grain: policy rule '{}' ({}) failed: {}", i.name, i.trigger, msg);
  if (const std::string tb = lua.take_traceback(); !tb.empty()) spdlog::debug("grain: {}", tb);
  if (i.disabled) return;
  if (disable_why) {
    i.disabled = true;
    spdlog::error("grain: policy rule '{}' disabled: {}", i.name, disable_why);
  } else if (i.consecutive_errors >= opts.max_consecutive_errors) {
    i.disabled = true;
    spdlog::error("grain: policy rule '{}' disabled after {} consecutive errors", i.name,
                  i.consecutive_errors);
  }
}

void engine::impl::record_success(rule& r) {
  r.info.consecutive_errors = 0;
}

}  // namespace grain::policy
