// Parcel coalescing (coalescer.hpp): the queues per (destination, action), Algorithm 1 of
// Wagle 2019, the knobs and the flush timer's thread.
#include "coalescer.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <limits>
#include <stdexcept>

#include "coalescing_counters.hpp"
#include "grain/clock.hpp"
#include "grain/detail/cpu_relax.hpp"
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
  if (coalesced_.load() == max_coalesced)
    throw std::invalid_argument("cannot coalesce '" + a.name + "': at most " +
                                std::to_string(max_coalesced) + " actions can be coalesced");
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
  s->stats.per_dest = std::make_unique<coalescing_stats::per_destination[]>(localities_);
  s->stats.destinations = localities_;
  s->stats.gap_histogram = std::make_shared<instrumentation::histogram>(
      0, static_cast<double>(gap_histogram_range_ns), gap_histogram_buckets);
  if (registry_)
    for (int id : register_coalescing_counters(*registry_, rank_, s->name, s->stats))
      counter_ids_.push_back(id);
  states_.push_back(std::move(s));
  // Published after it is complete: find() reads the table without states_m_.
  const std::size_t k = coalesced_.load();
  table_[k].store(raw, std::memory_order_release);
  coalesced_.store(k + 1, std::memory_order_release);
  if (!timer_thread_.joinable()) timer_thread_ = std::thread([this] { timer_loop(); });
}

std::int64_t coalescer::max_parcels(const action_state& s) const noexcept {
  return (s.own_parcels ? s.parcels : default_parcels_)->int_value();
}

std::int64_t coalescer::interval_us(const action_state& s) const noexcept {
  return (s.own_interval ? s.interval : default_interval_)->int_value();
}

coalescer::action_state* coalescer::find(std::uint64_t action) const noexcept {
  const std::size_t n = coalesced_.load(std::memory_order_acquire);
  for (std::size_t k = 0; k < n; ++k) {
    action_state* s = table_[k].load(std::memory_order_acquire);
    if (s->id == action) return s;
  }
  return nullptr;
}

bool coalescer::enqueue(std::uint32_t dest, std::uint64_t action, parcel_kind kind,
                        std::uint64_t signature, std::uint64_t continuation,
                        const detail::args_writer& write) {
  if (dest >= localities_) return false;
  action_state* s = find(action);
  if (!s) return false;
  maybe_raise_event(*s, queue_parcel(dest, *s, kind, signature, continuation, write));
  return true;
}

bool coalescer::submit(std::uint32_t dest, const parcel& p) {
  const detail::args_writer payload{[](const void* ctx, std::vector<char>& out) {
                                      const auto& bytes = static_cast<const parcel*>(ctx)->payload;
                                      out.insert(out.end(), bytes.begin(), bytes.end());
                                    },
                                    &p};
  return enqueue(dest, p.action, p.kind, p.signature, p.continuation, payload);
}

bool coalescer::post(std::uint32_t dest, const detail::action_info& a,
                     const detail::args_writer& write) {
  return enqueue(dest, a.id, parcel_kind::post, a.signature, 0, write);
}

bool coalescer::call(std::uint32_t dest, const detail::action_info& a, std::uint64_t continuation,
                     const detail::args_writer& write) {
  return enqueue(dest, a.id, parcel_kind::call, a.signature, continuation, write);
}

std::uint64_t coalescer::queue_parcel(std::uint32_t dest, action_state& s, parcel_kind kind,
                                      std::uint64_t signature, std::uint64_t continuation,
                                      const detail::args_writer& write) {
  queue& q = s.queues[dest];
  coalescing_stats::per_destination& st = s.stats.per_dest[dest];
  const std::int64_t n_max = max_parcels(s);
  const std::int64_t interval = interval_us(s);
  const auto cap = static_cast<std::size_t>(max_bytes_->int_value());
  std::lock_guard lock(q.m);
  const std::uint64_t now = now_ns();
  const std::uint64_t gap = q.last_ns == 0 ? never : now - q.last_ns;
  // A batch's parcels share its signature (every caller gives the action's own).
  if (!q.msg.empty() && q.signature != signature) flush(dest, q, s);
  // The parcel first, so that an exception of `write` changes nothing.
  if (q.msg.empty()) {
    q.msg.reserve(std::max(q.last_bytes, std::size_t{1024}));
    begin_batch(q.msg, rank_, s.id, signature);
    q.signature = signature;
  }
  const std::size_t at = open_batch_parcel(q.msg, kind, continuation);
  try {
    write(q.msg);
    close_batch_parcel(q.msg, at);
  } catch (...) {
    q.msg.resize(q.parcels == 0 ? 0 : at);
    throw;
  }
  if (q.parcels > 0 && q.msg.size() > cap) {
    // It would overflow the message: the queue leaves without it, and it starts the next one.
    std::vector<char> parcel_bytes(q.msg.begin() + static_cast<std::ptrdiff_t>(at), q.msg.end());
    q.msg.resize(at);
    flush(dest, q, s);
    begin_batch(q.msg, rank_, s.id, signature);
    q.msg.insert(q.msg.end(), parcel_bytes.begin(), parcel_bytes.end());
  }
  ++q.parcels;
  // One writer per destination (this lock): plain stores, no read-modify-write.
  const auto bump = [](std::atomic<std::uint64_t>& c, std::uint64_t by) {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  };
  q.last_ns = now;
  bump(st.parcels, 1);
  if (gap != never) {
    bump(st.gaps, 1);
    bump(st.gap_ns, gap);
    bump(st.log2_gaps, static_cast<std::uint64_t>(std::bit_width(gap)));
    ++q.gap_buckets[gap_bucket(gap)];
    q.gap_sum += static_cast<double>(gap);
    ++q.gap_count;
  }
  const bool sparse = gap > static_cast<std::uint64_t>(interval) * 1000;
  // Off, one parcel per message, sparse traffic or full: the queue (this parcel included,
  // after those already waiting) leaves now.
  if (interval == 0 || sparse || static_cast<std::int64_t>(q.parcels) >= n_max ||
      q.msg.size() >= cap) {
    flush(dest, q, s);
    return now;
  }
  if (q.parcels == 1) {
    q.first_ns.store(now);
    if (now + static_cast<std::uint64_t>(interval) * 1000 < timer_next_.load()) wake_timer();
  }
  return now;
}

void coalescer::maybe_raise_event(action_state& s, std::uint64_t now, bool by_timer) {
  const std::int64_t every = event_parcels_->int_value();
  if (every <= 0) return;
  coalescing_stats& st = s.stats;
  const std::uint64_t parcels = st.parcels();
  std::uint64_t last = st.last_event_ns.load(std::memory_order_relaxed);
  if ((!by_timer && parcels - st.last_event_parcels.load(std::memory_order_relaxed) <
                        static_cast<std::uint64_t>(every)) ||
      now < last + min_event_period_ns)
    return;
  // One sender wins the window; the others go on queueing.
  if (!st.last_event_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  // The timer's events take the time window only: the parcel count's window stays the
  // senders' (an event every N parcels, whatever the timer did meanwhile).
  if (!by_timer) st.last_event_parcels.store(parcels, std::memory_order_relaxed);
  // Running totals: the policy differences two events, as it would two snapshots.
  grain::event(
      "coalescing." + s.name,
      {{"parcels", static_cast<double>(parcels)},
       {"messages", static_cast<double>(st.messages.load(std::memory_order_relaxed))},
       {"gaps", static_cast<double>(st.gaps())},
       {"gap_ns", static_cast<double>(st.gap_ns())},
       {"log2_gaps", static_cast<double>(st.log2_gaps())},
       {"bytes", static_cast<double>(st.bytes.load(std::memory_order_relaxed))},
       {"timer_flushes", static_cast<double>(st.timer_flushes.load(std::memory_order_relaxed))},
       {"time_ns", static_cast<double>(now)},
       {"by_timer", by_timer ? 1.0 : 0.0}});
}

void coalescer::flush(std::uint32_t dest, queue& q, action_state& s) {
  if (q.msg.empty()) return;
  const std::size_t n = q.parcels;
  seal_batch(q.msg, n);
  std::vector<char> msg;
  msg.swap(q.msg);
  q.parcels = 0;
  q.last_bytes = msg.size();
  q.first_ns.store(0);
  coalescing_stats& st = s.stats;
  if (q.gap_count != 0) {
    st.gap_histogram->add(q.gap_buckets, q.gap_sum);
    std::fill(std::begin(q.gap_buckets), std::end(q.gap_buckets), 0U);
    q.gap_sum = 0;
    q.gap_count = 0;
  }
  st.messages.fetch_add(1, std::memory_order_relaxed);
  st.bytes.fetch_add(msg.size(), std::memory_order_relaxed);
  send_(dest, std::move(msg), n);
}

void coalescer::flush_all() {
  std::shared_lock states(states_m_);
  for (const auto& s : states_)
    for (std::uint32_t d = 0; d < localities_; ++d) {
      std::lock_guard lock(s->queues[d].m);
      flush(d, s->queues[d], *s);
    }
}

void queue_lock::wait() noexcept {
  for (int spins = 0; flag_.load(std::memory_order_relaxed); ++spins) {
    if (spins < 128)
      grain::detail::cpu_relax();
    else
      std::this_thread::yield();
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
    std::vector<action_state*> flushed;  // raise their events once states_m_ is released
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
          flush(d, q, *s);
          if (std::find(flushed.begin(), flushed.end(), s.get()) == flushed.end())
            flushed.push_back(s.get());
        }
      }
    }
    // A queue the timer had to send did not fill in time: the traffic changed (fewer parcels,
    // or bursts smaller than a message). A policy hears of it now, not N parcels later — at
    // one parcel per round trip that could be hundreds of timer intervals.
    const std::uint64_t now = now_ns();
    for (action_state* s : flushed) maybe_raise_event(*s, now, true);
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
