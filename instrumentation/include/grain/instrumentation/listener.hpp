#pragma once
// What the sampler hands to its listeners (CSV/table output, the OTF2 and Perfetto writers,
// the policy engine): counter snapshots every sample interval, and application events as
// they happen. Listeners are called on the sampler thread (snapshots) or on the thread that
// raised the event; they must not block for long.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace grain::instrumentation {

enum class counter_kind { raw, monotonic, gauge, average, histogram };

struct counter_value {
  std::string name;       // full name, e.g. /threads{locality#0/total}/idle-rate
  double value = 0;       // for histograms: the mean of the samples
  bool available = true;  // false: the counter cannot be read (PAPI event in a VM, ...)
  counter_kind kind = counter_kind::raw;
};

struct counter_snapshot {
  std::uint64_t time_ns = 0;          // grain::now_ns() when taken
  std::uint64_t sequence = 0;         // 0, 1, 2, ... per sampler
  std::vector<counter_value> values;  // sorted by name
  // Added by the instrumentation: changes whenever the set of counters (names, order) changes,
  // so a listener can cache indices into `values` while it stays the same.
  std::uint64_t layout_generation = 0;
  bool final = false;  // the last snapshot, taken when the runtime stops

  // Binary search by full name; null when absent.
  const counter_value* find(std::string_view name) const noexcept;
};

// grain::event(name, payload): lifecycle ("start", "stop") and application events ("iteration").
struct app_event {
  std::uint64_t time_ns = 0;
  std::string name;
  std::vector<std::pair<std::string, double>> payload;  // e.g. {"duration_ns", 1.2e6}, {"step", 3}
  double get(std::string_view key, double fallback = 0) const noexcept;
};

class listener {
 public:
  virtual ~listener() = default;
  virtual void on_sample(const counter_snapshot&) {}
  virtual void on_event(const app_event&) {}
  // Return once everything delivered so far has been handled. A listener that queues samples
  // and events for a thread of its own (the policy engine) waits for that thread here.
  virtual void settle() {}
};

// Register with the running sampler (the instrumentation extension). A listener added before
// the runtime starts sees every sample; remove before destroying it. Adding the same listener
// twice has no effect. Do not add or remove listeners from inside a listener callback.
void add_listener(listener* l);
void remove_listener(listener* l);

// Wait until every listener has handled the samples and events delivered so far: the policy
// engine runs its rules on its own thread, so a knob a rule sets in answer to an event may
// change some time after grain::event returned. An application that reads a knob right after
// such an event, and wants the answer, calls this in between. It blocks the calling thread
// (a worker, when called from a task) for a round trip to the policy thread, tens of
// microseconds: use it at a few points of a run (the first time steps), not per task.
void settle_listeners();

}  // namespace grain::instrumentation
