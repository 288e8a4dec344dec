#pragma once
// Parts of grain outside runtime/ (instrumentation, tracing, policy engine) plug into the
// runtime through this interface, so that runtime/ never depends on them.
#include <string>
#include <vector>

#include "grain/options.hpp"

namespace grain {

class runtime_core;

// Thrown from extension::configure to end start-up early with an exit code, after the
// extension printed what was asked (--grain:list-counters) or an error message.
struct startup_exit {
  int code = 0;
};

class extension {
 public:
  virtual ~extension() = default;
  virtual std::string name() const = 0;
  virtual std::vector<option_spec> option_specs() const { return {}; }
  // After options are parsed, before workers start. May throw startup_exit or
  // option_error (reported, exit code 2).
  virtual void configure(const options&, runtime_core&) {}
  // Workers exist (hooks may be installed here; they see every task from the first one).
  virtual void start(runtime_core&) {}
  // The application's own tasks are done; an extension that can bring more work into this
  // process (parcels from other localities) waits here until no more can come. Called in
  // start order, before any extension stops, while workers and every extension still run.
  virtual void quiesce(runtime_core&) {}
  // The application finished (all its tasks are done) but workers still run; extensions stop
  // in reverse order of start. Writers flush here.
  virtual void stop(runtime_core&) {}
  // Called from the fatal-signal path (SIGINT/SIGTERM) before the signal is re-raised: flush
  // what can be flushed. Runs on the signal-handling thread, not in a signal handler.
  virtual void emergency_stop(runtime_core&) {}
  // The runtime's start failed in this process with an error (not a startup_exit), before or
  // after this extension's configure: release what would wait for other processes (the other
  // MPI ranks started theirs). Called before the started extensions stop.
  virtual void start_failed(runtime_core&) noexcept {}
};

}  // namespace grain
