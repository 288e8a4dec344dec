#pragma once
// What the session records besides the task path: counter samples and the program's events (a
// listener of the sampler), policy decisions with the knobs' values (a knob listener), written
// by the back end under the session's aux_mutex. Separate from the hooks: these run on the
// sampler's and the policy engine's threads and on the thread that raised an event.
#include <memory>

#include "session_core.hpp"

namespace grain::instrumentation::trace_detail {

class sampler_sink;
struct decision_sink;

class session_listeners {
 public:
  session_listeners();
  ~session_listeners();
  session_listeners(const session_listeners&) = delete;
  session_listeners& operator=(const session_listeners&) = delete;

  // Writes every knob's value at the start (viewers draw each knob as a step curve from the
  // beginning) and subscribes to what s.cfg asks for.
  void start(session_core& s);
  // Unsubscribes; without `emergency` the counters' final values are sampled first. Nothing
  // reaches the back end once it returns.
  void stop(session_core& s, bool emergency);

 private:
  std::unique_ptr<sampler_sink> sampler_;
  std::shared_ptr<decision_sink> decisions_;
  int decision_listener_ = -1;
};

}  // namespace grain::instrumentation::trace_detail
