// Parcel coalescing (coalescer.hpp): the queues per (destination, action), Algorithm 1 of
// seed 001, the knobs and the flush timer's thread.
#include "coalescer.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <limits>
#include <stdexcept>

#include "coalescing_counters.hpp"
#include "grain/clock.hpp"
#include "grain/instrumentation/app.hpp"

namespace grain::distributed {

namespace {
constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();
// Events at most this often per action: each wakes the policy thread, which on a machine
// whose cores the workers keep busy takes its time from them; a dense burst of tens of ms
// still brings tens of events (docs/coalescing.md, "Events").
constexpr std::uint64_t min_event_period_ns = 1'000'000;
}  // namespace

coalescer::coalescer(std::uint32_t rank, std::uint32_t localities, sender send)
    : rank_(rank),
      localities_(localities),
      send_(std::move(send)),
      default_parcels_(&knobs().define_int(
          "coalescing.default.parcels", 1, 4096, 64,
          "parcels per coalesced message, for coalesced actions without their own value")),
      default_interval_(&knobs().define_int(
          "coalescing.default.interval", 0, 100000, 100,
          "µs a coalesced parcel may wait for others (0: coalescing off), for coalesced "
          "actions without their own value")),
      max_bytes_(&knobs().define_int("coalescing.max-bytes", 1024, 64 << 20, 1 << 20,
                                     "byte cap of a coalesced message (headers included)")),
      event_parcels_(&knobs().define_int(
          "coalescing.event-parcels", 0, 1 << 20, 0,
          "raise the event coalescing.<action> every this many parcels of an action, at most "
          "every ms (0: no events); adaptive_coalescing.lua samples on it")) {
  default_interval_->on_change([this](double, double) { wake_timer(); });
}

coalescer::~coalescer() {
  // Callbacks first: a policy setting a knob now must not reach a coalescer going away.
  default_interval_->clear_callbacks();
  {
    std::shared_lock lock(states_m_);
    for (auto& s : states_) {
      s->parcels->clear_callbacks();
      s->interval->clear_callbacks();
    }
  }
  publish_counters(nullptr);
  flush_all();
  {
    std::lock_guard lock(timer_m_);
    stop_ = true;
  }
  timer_cv_.notify_all();
  if (timer_thread_.joinable()) timer_thread_.join();
}

std::string coalescer::short_name(const std::string& action_name) {
  const std::size_t at = action_name.rfind("::");
  return at == std::string::npos ? action_name : action_name.substr(at + 2);
}

void coalescer::enable(const detail::action_info& a) {
  std::unique_lock lock(states_m_);
  for (const auto& s : states_) {
    if (s->id == a.id) return;
    if (s->name == short_name(a.name))
      throw std::invalid_argument("cannot coalesce '" + a.name + "': another coalesced action is " +
                                  "also called '" + s->name + "' (knob names would clash)");
  }
  auto s = std::make_unique<action_state>();
  s->name = short_name(a.name);
  s->id = a.id;
  // An action's own knobs start at the defaults' current values and follow the defaults
  // until they are set themselves (or were given on the command line).
  const auto p0 = default_parcels_->int_value(), i0 = default_interval_->int_value();
  s->parcels = &knobs().define_int("coalescing." + s->name + ".parcels", 1, 4096, p0,
                                   "parcels per coalesced message of action " + a.name);
  s->interval = &knobs().define_int(
      "coalescing." + s->name + ".interval", 0, 100000, i0,
      "µs a parcel of action " + a.name + " may wait for others (0: coalescing off)");
  s->own_parcels = s->parcels->int_value() != p0;
  s->own_interval = s->interval->int_value() != i0;
  action_state* raw = s.get();
  s->parcels->on_change([raw](double, double) { raw->own_parcels = true; });
  s->interval->on_change([this, raw](double, double) {
    raw->own_interval = true;
    wake_timer();
  });
  s->queues = std::make_unique<queue[]>(localities_);
  s->stats.gap_histogram = std::make_shared<instrumentation::histogram>(0, 1e6, 20);
  if (registry_)
    for (int id : register_coalescing_counters(*registry_, rank_, s->name, s->stats))
      counter_ids_.push_back(id);
  states_.push_back(std::move(s));
  any_ = true;
  if (!timer_thread_.joinable()) timer_thread_ = std::thread([this] { timer_loop(); });
}

std::int64_t coalescer::max_parcels(const action_state& s) const noexcept {
  return (s.own_parcels ? s.parcels : default_parcels_)->int_value();
}

std::int64_t coalescer::interval_us(const action_state& s) const noexcept {
  return (s.own_interval ? s.interval : default_interval_)->int_value();
}

bool coalescer::submit(std::uint32_t dest, const parcel& p) {
  if (!any_.load(std::memory_order_relaxed) || dest >= localities_) return false;
  std::shared_lock states(states_m_);
  action_state* s = nullptr;
  for (const auto& c : states_)
    if (c->id == p.action) s = c.get();
  if (!s) return false;
  const std::uint64_t now = queue_parcel(dest, *s, p);
  states.unlock();  // action states are never removed: s stays valid
  maybe_raise_event(*s, now);
  return true;
}

std::uint64_t coalescer::queue_parcel(std::uint32_t dest, action_state& as, const parcel& p) {
  action_state* s = &as;
  queue& q = s->queues[dest];
  const std::int64_t n_max = max_parcels(*s);
  const std::int64_t interval = interval_us(*s);
  const auto cap = static_cast<std::size_t>(max_bytes_->int_value());
  std::lock_guard lock(q.m);
  const std::uint64_t now = now_ns();
  const std::uint64_t gap = q.last_ns == 0 ? never : now - q.last_ns;
  q.last_ns = now;
  s->stats.parcels.fetch_add(1, std::memory_order_relaxed);
  if (gap != never) {
    s->stats.gaps.fetch_add(1, std::memory_order_relaxed);
    s->stats.gap_ns.fetch_add(gap, std::memory_order_relaxed);
    s->stats.log2_gaps.fetch_add(static_cast<std::uint64_t>(std::bit_width(gap)),
                                 std::memory_order_relaxed);
    s->stats.gap_histogram->record(static_cast<double>(gap));
  }
  const bool sparse = gap > static_cast<std::uint64_t>(interval) * 1000;
  if (!q.msg.empty() && q.msg.size() + parcel_overhead() + p.payload.size() > cap)
    flush(dest, q, s->stats);
  if (q.msg.empty()) begin_message(q.msg);
  append_parcel(q.msg, p);
  ++q.parcels;
  // Off, one parcel per message, sparse traffic or full: the queue (this parcel included,
  // after those already waiting) leaves now.
  if (interval == 0 || sparse || static_cast<std::int64_t>(q.parcels) >= n_max ||
      q.msg.size() >= cap) {
    flush(dest, q, s->stats);
    return now;
  }
  if (q.parcels == 1) {
    q.first_ns.store(now);
    if (now + static_cast<std::uint64_t>(interval) * 1000 < timer_next_.load()) wake_timer();
  }
  return now;
}

void coalescer::maybe_raise_event(action_state& s, std::uint64_t now) {
  const std::int64_t every = event_parcels_->int_value();
  if (every <= 0) return;
  coalescing_stats& st = s.stats;
  const std::uint64_t parcels = st.parcels.load(std::memory_order_relaxed);
  std::uint64_t last = st.last_event_ns.load(std::memory_order_relaxed);
  if (parcels - st.last_event_parcels.load(std::memory_order_relaxed) <
          static_cast<std::uint64_t>(every) ||
      now < last + min_event_period_ns)
    return;
  // One sender wins the window; the others go on queueing.
  if (!st.last_event_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  st.last_event_parcels.store(parcels, std::memory_order_relaxed);
  // Running totals: the policy differences two events, as it would two snapshots.
  grain::event(
      "coalescing." + s.name,
      {{"parcels", static_cast<double>(parcels)},
       {"messages", static_cast<double>(st.messages.load(std::memory_order_relaxed))},
       {"gaps", static_cast<double>(st.gaps.load(std::memory_order_relaxed))},
       {"gap_ns", static_cast<double>(st.gap_ns.load(std::memory_order_relaxed))},
       {"log2_gaps", static_cast<double>(st.log2_gaps.load(std::memory_order_relaxed))},
       {"bytes", static_cast<double>(st.bytes.load(std::memory_order_relaxed))},
       {"timer_flushes", static_cast<double>(st.timer_flushes.load(std::memory_order_relaxed))},
       {"time_ns", static_cast<double>(now)}});
}

void coalescer::flush(std::uint32_t dest, queue& q, coalescing_stats& st) {
  if (q.msg.empty()) return;
  const std::size_t n = q.parcels;
  std::vector<char> msg;
  msg.swap(q.msg);
  q.parcels = 0;
  q.first_ns.store(0);
  st.messages.fetch_add(1, std::memory_order_relaxed);
  st.bytes.fetch_add(msg.size(), std::memory_order_relaxed);
  send_(dest, std::move(msg), n);
}

void coalescer::flush_all() {
  std::shared_lock states(states_m_);
  for (const auto& s : states_)
    for (std::uint32_t d = 0; d < localities_; ++d) {
      std::lock_guard lock(s->queues[d].m);
      flush(d, s->queues[d], s->stats);
    }
}

void coalescer::wake_timer() {
  {
    std::lock_guard lock(timer_m_);
    wake_ = true;
  }
  timer_cv_.notify_one();
}

void coalescer::timer_loop() {
  for (;;) {
    {
      std::lock_guard lock(timer_m_);
      if (stop_) return;
      wake_ = false;
      timer_next_.store(never);  // a queue that starts during the scan wakes us again
    }
    std::uint64_t earliest = never;
    {
      std::shared_lock states(states_m_);
      for (const auto& s : states_) {
        const auto interval = static_cast<std::uint64_t>(interval_us(*s)) * 1000;
        for (std::uint32_t d = 0; d < localities_; ++d) {
          queue& q = s->queues[d];
          const std::uint64_t first = q.first_ns.load();
          if (first == 0) continue;
          const std::uint64_t deadline = first + interval;
          std::uint64_t now = now_ns();
          if (deadline > now) {
            earliest = std::min(earliest, deadline);
            continue;
          }
          std::lock_guard lock(q.m);
          if (q.first_ns.load() != first) continue;  // sent meanwhile
          now = now_ns();
          const std::uint64_t late = now - deadline;
          timer_.flushes.fetch_add(1, std::memory_order_relaxed);
          timer_.late_ns.fetch_add(late, std::memory_order_relaxed);
          if (late > timer_.max_late_ns.load()) timer_.max_late_ns.store(late);
          s->stats.timer_flushes.fetch_add(1, std::memory_order_relaxed);
          flush(d, q, s->stats);
        }
      }
    }
    std::unique_lock lock(timer_m_);
    timer_next_.store(earliest);
    auto pred = [this] { return wake_ || stop_; };
    if (earliest == never) {
      timer_cv_.wait(lock, pred);
    } else {
      const std::uint64_t now = now_ns();
      if (earliest > now) timer_cv_.wait_for(lock, std::chrono::nanoseconds(earliest - now), pred);
    }
  }
}

std::vector<coalescer::action_view> coalescer::actions() const {
  std::shared_lock lock(states_m_);
  std::vector<action_view> out;
  for (const auto& s : states_) out.push_back({s->name, &s->stats});
  return out;
}

}  // namespace grain::distributed

namespace grain::distributed {

void coalescer::publish_counters(instrumentation::counter_registry* reg) {
  std::unique_lock lock(states_m_);
  if (registry_)
    for (int id : counter_ids_) registry_->remove(id);
  counter_ids_.clear();
  registry_ = reg;
  if (!reg) return;
  counter_ids_ = register_timer_counters(*reg, rank_, timer_);
  for (const auto& s : states_)
    for (int id : register_coalescing_counters(*reg, rank_, s->name, s->stats))
      counter_ids_.push_back(id);
}

}  // namespace grain::distributed
