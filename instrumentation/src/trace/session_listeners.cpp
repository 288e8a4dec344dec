// Counter samples, the program's events and policy decisions into the trace (see
// session_listeners.hpp).
#include "session_listeners.hpp"

#include <mutex>

#include "grain/instrumentation/listener.hpp"
#include "grain/knob.hpp"

namespace grain::instrumentation::trace_detail {

// The sampler's listener: counter samples (when the session records them) and the program's
// events (grain::event, a point event of event_kinds.hpp), on the sampler's thread and on the
// thread that raised the event.
class sampler_sink final : public listener {
 public:
  explicit sampler_sink(session_core& s) : s_(s) {}
  void on_sample(const counter_snapshot& snap) override {
    if (!s_.cfg.counters) return;
    std::lock_guard lk(s_.aux_mutex);
    if (closed) return;
    s_.be->sample(s_, snap);
    ++s_.samples;
  }
  void on_event(const app_event& e) override {
    std::lock_guard lk(s_.aux_mutex);
    if (closed) return;
    s_.record_event_locked({event_kind::app, e.name, e.payload}, e.time_ns);
  }
  bool closed = false;  // under aux_mutex

 private:
  session_core& s_;
};

// Decision listeners are called outside the knob registry's lock, possibly after removal:
// the callback holds this shared state, never the session itself.
struct decision_sink {
  std::mutex m;
  session_core* s = nullptr;  // null once the session stopped
};

const std::vector<std::uint32_t>& session_core::wanted_counters(const counter_snapshot& snap) {
  if (snap.layout_generation != wanted_layout || wanted_layout == ~0ull) {
    wanted_layout = snap.layout_generation;
    wanted.clear();
    for (std::size_t i = 0; i < snap.values.size(); ++i) {
      bool keep = patterns.empty();
      for (auto& p : patterns)
        if (!keep && p.matches(snap.values[i].name)) keep = true;
      if (keep) wanted.push_back(static_cast<std::uint32_t>(i));
    }
  }
  return wanted;
}

session_listeners::session_listeners() = default;
session_listeners::~session_listeners() = default;

void session_listeners::start(session_core& s) {
  {
    std::lock_guard alk(s.aux_mutex);
    for (knob* k : knobs().all()) s.be->knob_value(s, k->name(), k->value(), s.start_ns);
  }
  if (s.cfg.decisions) {
    decisions_ = std::make_shared<decision_sink>();
    decisions_->s = &s;
    decision_listener_ = knobs().add_listener([d = decisions_](const decision_record& r) {
      std::lock_guard dl(d->m);
      session_core* sc = d->s;
      if (!sc) return;
      std::lock_guard al(sc->aux_mutex);
      sc->be->decision(*sc, r, sc->clamp_aux(r.time_ns));
      ++sc->decisions;
    });
  }
  sampler_ = std::make_unique<sampler_sink>(s);
  add_listener(sampler_.get());
}

void session_listeners::stop(session_core& s, bool emergency) {
  if (sampler_) {
    // The final values (the sampler's own final snapshot comes after our stop).
    if (!emergency && s.cfg.counters) sample_now();
    remove_listener(sampler_.get());
    std::lock_guard al(s.aux_mutex);
    sampler_->closed = true;
  }
  if (decisions_) {
    knobs().remove_listener(decision_listener_);
    std::lock_guard dl(decisions_->m);
    decisions_->s = nullptr;
  }
}

}  // namespace grain::instrumentation::trace_detail
