// Application counters (grain::counters::define, grain::sample_value) and events.
#include "grain/instrumentation/app.hpp"

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_map>

#include "grain/clock.hpp"
#include "grain/instrumentation/counters.hpp"
#include "listeners.hpp"

namespace grain {
namespace counters {
namespace detail {

struct app_counter_state {
  std::string name;
  kind k = kind::raw;
  std::atomic<double> last{0};
  std::atomic<double> sum{0};
  std::atomic<std::uint64_t> count{0};  // since the last reset
  std::atomic<std::uint64_t> ever{0};   // since definition
};

}  // namespace detail

namespace {

using detail::app_counter_state;
using instrumentation::counter_info;
using instrumentation::counter_reading;

class app_provider final : public instrumentation::counter_provider {
 public:
  app_provider(counter_info info, app_counter_state* s) : infos_{std::move(info)}, s_(s) {}
  const std::vector<counter_info>& counters() const override { return infos_; }
  void sample(std::uint64_t, counter_reading* out) override {
    const std::uint64_t n = s_->count.load(std::memory_order_relaxed);
    switch (s_->k) {
      case kind::raw:
      case kind::gauge:
        *out = {s_->last.load(std::memory_order_relaxed),
                s_->ever.load(std::memory_order_relaxed) > 0};
        break;
      case kind::monotonic:
        *out = {s_->sum.load(std::memory_order_relaxed),
                s_->ever.load(std::memory_order_relaxed) > 0};
        break;
      case kind::average:
      case kind::histogram:
        if (n == 0)
          *out = {0, false};
        else
          *out = {s_->sum.load(std::memory_order_relaxed) / static_cast<double>(n), true};
        break;
    }
  }
  void reset(std::uint64_t) override {
    s_->sum.store(0, std::memory_order_relaxed);
    s_->count.store(0, std::memory_order_relaxed);
  }

 private:
  std::vector<counter_info> infos_;
  app_counter_state* s_;
};

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

struct app_registry {
  std::shared_mutex m;
  std::deque<app_counter_state> states;  // stable addresses, never freed
  std::unordered_map<std::string, app_counter_state*, string_hash, std::equal_to<>> by_name;
  // Event counts: /events{locality#0/total}/count/NAME
  std::deque<std::atomic<std::uint64_t>> event_counts;
  std::unordered_map<std::string, std::atomic<std::uint64_t>*, string_hash, std::equal_to<>> events;
};

app_registry& apps() {
  static app_registry* r = new app_registry();  // used until the process ends
  return *r;
}

app_counter_state* find(std::string_view name) {
  auto& r = apps();
  std::shared_lock lk(r.m);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : it->second;
}

}  // namespace

namespace detail {
void sample_state(app_counter_state* s, double value) noexcept {
  s->last.store(value, std::memory_order_relaxed);
  s->sum.fetch_add(value, std::memory_order_relaxed);
  s->count.fetch_add(1, std::memory_order_relaxed);
  s->ever.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace detail

void app_counter::sample(double value) const noexcept {
  if (state_) detail::sample_state(state_, value);
}

const std::string& app_counter::name() const noexcept {
  static const std::string empty;
  return state_ ? state_->name : empty;
}

app_counter define(std::string_view name, std::string_view description, std::string_view unit,
                   kind k) {
  auto& r = apps();
  std::unique_lock lk(r.m);
  if (auto it = r.by_name.find(name); it != r.by_name.end()) {
    if (it->second->k != k)
      throw std::invalid_argument("counter '" + std::string(name) +
                                  "' is already defined with another kind");
    return app_counter(it->second);
  }
  auto parsed = instrumentation::parse_counter_name(name);
  if (!parsed || name.find('*') != std::string_view::npos)
    throw std::invalid_argument("invalid counter name '" + std::string(name) +
                                "' (expected /app/NAME or /object{instance}/NAME, no '*')");
  auto& s = r.states.emplace_back();
  s.name = std::string(name);
  s.k = k;
  // Registering may throw (the name is taken by a runtime counter): undo.
  try {
    instrumentation::registry().add_provider(std::make_shared<app_provider>(
        counter_info{s.name, std::string(unit), std::string(description), k}, &s));
  } catch (...) {
    r.states.pop_back();
    throw;
  }
  r.by_name.emplace(s.name, &s);
  return app_counter(&s);
}

void reset() {
  instrumentation::registry().reset();
}

}  // namespace counters

void sample_value(std::string_view name, double value) {
  auto* s = counters::find(name);
  if (!s) {
    try {
      counters::define(name, "defined by sample_value", "", counters::kind::raw).sample(value);
    } catch (const std::invalid_argument&) {
      // A concurrent define with another kind won the race: use it.
      if (auto* t = counters::find(name))
        counters::detail::sample_state(t, value);
      else
        throw;
    }
    return;
  }
  counters::detail::sample_state(s, value);
}

void event(std::string_view name, std::vector<std::pair<std::string, double>> payload) {
  instrumentation::app_event e;
  e.time_ns = now_ns();
  e.name = std::string(name);
  e.payload = std::move(payload);
  instrumentation::detail::notify_event(e);

  // Count it.
  auto& r = counters::apps();
  std::atomic<std::uint64_t>* c = nullptr;
  {
    std::shared_lock lk(r.m);
    auto it = r.events.find(name);
    if (it != r.events.end()) c = it->second;
  }
  if (!c) {
    std::unique_lock lk(r.m);
    auto it = r.events.find(name);
    if (it != r.events.end()) {
      c = it->second;
    } else {
      std::string clean(name);
      for (char& ch : clean)
        if (ch == '{' || ch == '}' || ch == '*') ch = '_';
      if (clean.empty()) clean = "_";
      c = &r.event_counts.emplace_back(0);
      r.events.emplace(std::string(name), c);
      try {
        instrumentation::registry().add_counter(
            {"/events{" + instrumentation::here_instance() + "}/count/" + clean, "count",
             "application or lifecycle events '" + clean + "' raised",
             instrumentation::counter_kind::monotonic},
            [c]() { return static_cast<double>(c->load(std::memory_order_relaxed)); });
      } catch (const std::invalid_argument&) {
        // Two names that clean to the same counter name: counted under the first.
      }
    }
  }
  c->fetch_add(1, std::memory_order_relaxed);
}

}  // namespace grain
