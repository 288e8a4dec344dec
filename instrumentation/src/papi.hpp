#pragma once
// PAPI hardware counters per worker: availability checks and the session (papi.cpp).
#include <memory>
#include <string>
#include <vector>

#include "grain/ext/runtime_core.hpp"
#include "grain/instrumentation/counters.hpp"

namespace grain::instrumentation::detail {

struct papi_event_status {
  std::string name;
  bool available = false;
  std::string reason;  // why not, when unavailable
};
// Initialises PAPI (library + thread support) once per process; false with a reason when the
// library cannot be initialised.
bool papi_init(std::string* error);
// For each event: can PAPI count it here? (name known, event offered, and an event set with it
// can be added, started and read on the calling thread.)
std::vector<papi_event_status> papi_check(const std::vector<std::string>& events);

class papi_session {
 public:
  // Warns once per unavailable event. Installs the worker_start/worker_stop hooks (chained).
  papi_session(const std::vector<std::string>& events, runtime_core& rt);
  ~papi_session();
  std::shared_ptr<counter_provider> provider();
  const std::vector<papi_event_status>& status() const noexcept;

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace grain::instrumentation::detail
