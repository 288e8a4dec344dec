// policies-lua/adaptive_coalescing.lua on synthetic traffic (no runtime, no MPI): Algorithm 1
// is simulated here over made-up arrival times — dense bursts, a trickle, paced sends, rounds of
// 4 parcels — with the knobs as the policy sets them, and the coalescer's events (running
// totals every 64 parcels, at most every ms) are fed to the engine. The simulation also
// measures what the knobs cost: how long parcels waited and how many per message they went,
// so the checks are about the outcome (coalesced in bursts, nothing waiting in a trickle or in
// rounds), not about the policy's internals.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "grain/clock.hpp"
#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace {

using grain::policy::engine;
namespace inst = grain::instrumentation;

// One (destination, action) queue of Algorithm 1 in simulated time (ns), with the stats the
// coalescer keeps and its events.
class simulated_coalescer {
 public:
  simulated_coalescer(engine& e, grain::knob& parcels, grain::knob& interval)
      : e_(e), parcels_(parcels), interval_(interval) {}

  // A parcel arrives at t (ns, increasing).
  void arrive(std::uint64_t t) {
    timer(t);
    const auto interval = static_cast<std::uint64_t>(interval_.int_value()) * 1000;
    const auto n = static_cast<std::size_t>(parcels_.int_value());
    ++parcels_total_;
    if (last_ != 0) {
      ++gaps_;
      gap_ns_ += t - last_;
      log2_gaps_ += static_cast<std::uint64_t>(std::bit_width(t - last_));
    }
    const bool sparse = last_ == 0 || t - last_ > interval;
    last_ = t;
    queued_.push_back(t);
    if (interval == 0 || sparse || queued_.size() >= n) send(t, false);
    if (parcels_total_ - last_event_parcels_ >= 64 && t >= last_event_ns_ + 1'000'000) event(t);
  }
  // Lets simulated time pass to t (the flush timer).
  void timer(std::uint64_t t) {
    const auto interval = static_cast<std::uint64_t>(interval_.int_value()) * 1000;
    // A shorter interval applies to what waits already, but no earlier than the last arrival.
    if (!queued_.empty() && queued_.front() + interval <= t)
      send(std::max(queued_.front() + interval, queued_.back()), true);
  }

  // When what is queued leaves by the timer (0: nothing queued).
  std::uint64_t pending_until() const {
    if (queued_.empty()) return 0;
    return queued_.front() + static_cast<std::uint64_t>(interval_.int_value()) * 1000;
  }

  // What happened since the last mark.
  struct outcome {
    double mean_wait_us = 0, parcels_per_message = 0;
  };
  outcome since_mark() {
    outcome o;
    const double p = static_cast<double>(sent_ - mark_sent_);
    const double m = static_cast<double>(messages_ - mark_messages_);
    if (p > 0) o.mean_wait_us = (wait_ns_ - mark_wait_) / p / 1000;
    if (m > 0) o.parcels_per_message = p / m;
    mark_sent_ = sent_;
    mark_messages_ = messages_;
    mark_wait_ = wait_ns_;
    return o;
  }

 private:
  void send(std::uint64_t t, bool by_timer) {
    for (std::uint64_t a : queued_) wait_ns_ += static_cast<double>(t - a);
    sent_ += queued_.size();
    bytes_ += 16 + 40 * queued_.size();
    queued_.clear();
    ++messages_;
    if (by_timer) ++timer_flushes_;
  }
  void event(std::uint64_t t) {
    last_event_parcels_ = parcels_total_;
    last_event_ns_ = t;
    inst::app_event ev;
    ev.time_ns = grain::now_ns();
    ev.name = "coalescing.acw";
    auto d = [](std::uint64_t v) { return static_cast<double>(v); };
    ev.payload = {{"parcels", d(parcels_total_)},
                  {"messages", d(messages_)},
                  {"gaps", d(gaps_)},
                  {"gap_ns", d(gap_ns_)},
                  {"log2_gaps", d(log2_gaps_)},
                  {"bytes", d(bytes_)},
                  {"timer_flushes", d(timer_flushes_)},
                  {"time_ns", d(t)}};
    e_.feed_event(ev);
    e_.pump();  // the policy answers before the next parcel (the real one, within ~100 µs)
  }

  engine& e_;
  grain::knob& parcels_;
  grain::knob& interval_;
  std::vector<std::uint64_t> queued_;
  std::uint64_t last_ = 0, parcels_total_ = 0, messages_ = 0, gaps_ = 0, gap_ns_ = 0;
  std::uint64_t log2_gaps_ = 0, bytes_ = 0, timer_flushes_ = 0, sent_ = 0;
  std::uint64_t last_event_parcels_ = 0, last_event_ns_ = 0;
  std::uint64_t mark_sent_ = 0, mark_messages_ = 0;
  double wait_ns_ = 0, mark_wait_ = 0;
};

// Phases of traffic, each continuing the simulated clock.
struct traffic {
  simulated_coalescer& c;
  std::uint64_t t = 1'000'000;
  // n parcels `gap_ns` apart; then a pause in which what is queued leaves by the timer.
  void steady(int n, std::uint64_t gap_ns) {
    for (int i = 0; i < n; ++i) c.arrive(t += gap_ns);
    if (const std::uint64_t u = c.pending_until()) c.timer(t = u);
    t += 1'000'000;
  }
  // `rounds` bursts of `k` parcels 1 µs apart; the next round starts `rtt_ns` after the last
  // parcel of the round left (it waits for the answers).
  void rounds(int rounds, int k, std::uint64_t rtt_ns) {
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < k; ++i) c.arrive(t += 1'000);
      if (const std::uint64_t u = c.pending_until()) c.timer(t = u);
      t += rtt_ns;
    }
  }
};

struct knobs_at {
  grain::knob& parcels;
  grain::knob& interval;
};

knobs_at start_at(std::int64_t parcels, std::int64_t interval) {
  grain::knob& p = grain::knobs().define_int("coalescing.acw.parcels", 1, 4096, 64, "test");
  grain::knob& i = grain::knobs().define_int("coalescing.acw.interval", 0, 100000, 100, "test");
  grain::knobs().define_int("coalescing.event-parcels", 0, 1 << 20, 0, "test");
  p.set(static_cast<double>(parcels), "test start");
  i.set(static_cast<double>(interval), "test start");
  return {p, i};
}

void check_phases(std::int64_t parcels0, std::int64_t interval0) {
  auto k = start_at(parcels0, interval0);
  const auto from = grain::knobs().decisions().size();
  engine e;
  e.load_string("require('adaptive_coalescing').start{ action = 'acw' }\n", "start.lua");
  EXPECT_EQ(grain::knobs().find("coalescing.event-parcels")->int_value(), 64)
      << "the policy asks the coalescer for its events";
  simulated_coalescer c(e, k.parcels, k.interval);
  traffic tr{c};

  for (int phase = 0; phase < 2; ++phase) {
    SCOPED_TRACE(phase == 0 ? "first round of phases" : "second round of phases");
    // Dense: 100,000 parcels 300 ns apart (30 ms); the policy has to act within the burst.
    tr.steady(2'000, 300);
    c.since_mark();
    tr.steady(98'000, 300);
    const auto dense = c.since_mark();
    EXPECT_GE(dense.parcels_per_message, 16) << "dense: messages carry many parcels";
    EXPECT_LE(k.parcels.int_value(), 256) << "max_parcels";
    EXPECT_LT(dense.mean_wait_us, 100) << "a message fills quickly: no parcel waits long";
    // Sparse: 500 parcels 500 µs apart: none may wait.
    tr.steady(200, 500'000);
    c.since_mark();
    tr.steady(300, 500'000);
    const auto sparse = c.since_mark();
    EXPECT_LT(k.interval.int_value(), 500) << "sparse: the interval below the gap";
    EXPECT_LT(sparse.mean_wait_us, 1) << "sparse: parcels go at once";
    EXPECT_GE(k.parcels.int_value(), 16) << "ready for the next burst";
    // Paced: parcels 20 µs apart; a short interval would send each alone.
    tr.steady(2'000, 20'000);
    c.since_mark();
    tr.steady(8'000, 20'000);
    const auto paced = c.since_mark();
    EXPECT_GE(paced.parcels_per_message, 16) << "paced: coalesced over a longer interval";
    EXPECT_LT(paced.mean_wait_us, 2'000) << "within the latency budget";
    // Rounds of 4 parcels, 200 µs between rounds: a parcel waiting for company that does not
    // come delays its round.
    tr.rounds(200, 4, 200'000);
    c.since_mark();
    tr.rounds(300, 4, 200'000);
    const auto rounds = c.since_mark();
    EXPECT_LT(rounds.mean_wait_us, 20) << "rounds: the round's parcels do not wait for more";
  }
  bool named = false;
  auto all = grain::knobs().decisions();
  for (std::size_t i = from; i < all.size(); ++i)
    if (all[i].knob == "coalescing.acw.parcels" && all[i].rule == "adaptive_coalescing:acw")
      named = all[i].reason.find("parcels/message") != std::string::npos;
  EXPECT_TRUE(named) << "decisions carry the rule's name and the evidence";
}

TEST(AdaptiveCoalescingPolicy, FromOffFollowsEveryKindOfPhase) {
  check_phases(1, 0);
}

TEST(AdaptiveCoalescingPolicy, FromTheLargestFollowsEveryKindOfPhase) {
  check_phases(256, 5000);
}

// The policy checks its settings: a misspelt one is an error, not a silent default.
TEST(AdaptiveCoalescingPolicy, UnknownSettingIsAnError) {
  start_at(64, 100);
  engine e;
  EXPECT_THROW(e.load_string("require('adaptive_coalescing').start{ action = 'acw', evry = 8 }\n",
                             "bad.lua"),
               std::exception);
}

}  // namespace
