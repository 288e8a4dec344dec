// The listener table: the sampler's snapshots and grain::event go to every listener.
#include <algorithm>
#include <shared_mutex>

#include "internal.hpp"

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
  auto& t = table();
  std::shared_lock lk(t.m);
  for (auto* l : t.v) {
    try {
      l->on_sample(s);
    } catch (...) {
      // A listener's failure must not stop the sampler or the others.
    }
  }
}

void notify_event(const app_event& e) {
  auto& t = table();
  std::shared_lock lk(t.m);
  for (auto* l : t.v) {
    try {
      l->on_event(e);
    } catch (...) {
    }
  }
}

}  // namespace detail

void settle_listeners() {
  auto& t = table();
  std::shared_lock lk(t.m);
  for (auto* l : t.v) {
    try {
      l->settle();
    } catch (...) {
    }
  }
}

}  // namespace grain::instrumentation
