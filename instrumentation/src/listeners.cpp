// The listener table: the sampler's snapshots and grain::event go to every listener.
#include <algorithm>
#include <shared_mutex>

#include "listeners.hpp"

namespace grain::instrumentation {
namespace {

struct listener_table {
  std::shared_mutex m;
  std::vector<listener*> v;
};

listener_table& table() {
  static listener_table* t = new listener_table();  // used until the process ends
  return *t;
}

// Calls fn(l) for every listener. A listener's failure must not stop the sampler, the
// application or the other listeners.
template <class Fn>
void for_each_listener(Fn fn) {
  auto& t = table();
  std::shared_lock lk(t.m);
  for (auto* l : t.v) {
    try {
      fn(*l);
    } catch (...) {
    }
  }
}

}  // namespace

void add_listener(listener* l) {
  if (!l) return;
  auto& t = table();
  std::unique_lock lk(t.m);
  if (std::find(t.v.begin(), t.v.end(), l) == t.v.end()) t.v.push_back(l);
}

void remove_listener(listener* l) {
  auto& t = table();
  std::unique_lock lk(t.m);
  t.v.erase(std::remove(t.v.begin(), t.v.end(), l), t.v.end());
}

namespace detail {

void notify_sample(const counter_snapshot& s) {
  for_each_listener([&](listener& l) { l.on_sample(s); });
}

void notify_event(const app_event& e) {
  for_each_listener([&](listener& l) { l.on_event(e); });
}

}  // namespace detail

void settle_listeners() {
  for_each_listener([](listener& l) { l.settle(); });
}

}  // namespace grain::instrumentation
