#pragma once
// Application counters and events.
//
//   grain::counters::define("/app/iteration-time", "time of one solver iteration", "ns");
//   ...
//   grain::sample_value("/app/iteration-time", dt);          // thread-safe, cheap
//   grain::event("iteration", {{"duration_ns", dt}, {"step", step}});
//
// What a counter reports depends on its kind (relative to the last reset):
//   raw, gauge  the last value sampled
//   monotonic   the sum of the values sampled
//   average     the mean of the values sampled
//   histogram   the mean of the values sampled (the buckets are not exposed yet)
// A counter that was never sampled reports unavailable. Events go to every listener
// (policy engine, tracer) on the calling thread and are counted in
// /events{locality#0/total}/count/NAME.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grain/instrumentation/listener.hpp"

namespace grain {
namespace counters {

using kind = instrumentation::counter_kind;

namespace detail {
struct app_counter_state;
}

// A defined application counter; sample() skips the name lookup of grain::sample_value.
class app_counter {
 public:
  app_counter() = default;
  void sample(double value) const noexcept;
  const std::string& name() const noexcept;
  explicit operator bool() const noexcept { return state_ != nullptr; }

 private:
  friend app_counter define(std::string_view, std::string_view, std::string_view, kind);
  explicit app_counter(detail::app_counter_state* s) : state_(s) {}
  detail::app_counter_state* state_ = nullptr;  // lives until the process ends
};

// Define (or look up) an application counter. The name must be a valid counter name
// (/object/name or /object{instance}/name, no '*'); /app/... is the convention. Defining an
// existing name again returns it if the kind matches and throws std::invalid_argument
// otherwise. Counters outlive runtimes: define them before or after grain::runtime starts.
app_counter define(std::string_view name, std::string_view description, std::string_view unit = "",
                   kind k = kind::raw);

// Every counter (runtime and application) starts again from zero.
void reset();

}  // namespace counters

// Record a value for an application counter; an undefined name is defined on first use as a
// raw counter (description "defined by sample_value"). Thread-safe; a hash lookup under a
// shared lock plus a few atomic operations.
void sample_value(std::string_view name, double value);

// Deliver an application event to the listeners and count it.
void event(std::string_view name, std::vector<std::pair<std::string, double>> payload = {});

// Wait until the listeners (the policy engine's rules) have handled what was delivered so far;
// see instrumentation::settle_listeners.
using instrumentation::settle_listeners;

}  // namespace grain
