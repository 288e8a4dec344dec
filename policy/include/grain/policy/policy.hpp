#pragma once
// Compiled policies: the C++ counterpart of grain.on / grain.every / grain.tune.
//
//   grain::policy::register_periodic_policy(std::chrono::milliseconds(50),
//       [](grain::policy::policy_context& c) {
//         auto idle = c.counter("/threads/idle-rate");
//         if (idle && *idle > 0.5) c.set("pool.default.workers", c.get("pool.default.workers") - 1,
//                                        "idle");
//       }, "shrink-on-idle");
//
// Policies registered before the runtime starts wait for it; those registered while it runs
// start at once. They run on the policy thread, like Lua rules: same decision records (rule =
// the name given, default "cpp:<event>" or "cpp:every <ms> ms"), same error handling (disabled
// after 3 consecutive exceptions).
#include <chrono>
#include <string>

#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace grain::policy {

// Returns an id for unregister_policy.
int register_policy(std::string event_name, cpp_policy fn, std::string name = "");
int register_periodic_policy(std::chrono::milliseconds period, cpp_policy fn,
                             std::string name = "");
int register_tuner(tune_request r);
void unregister_policy(int id);

// Knob access for C++ policies outside a policy call: grain::knobs().at(name) works too;
// these record the decision with the given rule name.
decision_record set_knob(std::string_view knob, double value, std::string_view reason,
                         std::string_view rule = "cpp");

}  // namespace grain::policy
