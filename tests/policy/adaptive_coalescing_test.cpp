// policies-lua/adaptive_coalescing.lua on synthetic counter feeds (no runtime, no MPI): the
// snapshots a sender of action "acw" would produce, 10 ms apart, in phases — dense (one parcel
// per µs: the network overhead is high while messages carry few parcels) and sparse (one per
// 500 µs). The policy must coalesce in dense phases, keep the interval below the gap in sparse ones
// (no parcel waits), and coalesce again.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "grain/clock.hpp"
#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace {

using grain::policy::engine;
namespace inst = grain::instrumentation;

class sender_feed {
 public:
  sender_feed(engine& e, grain::knob& parcels, grain::knob& interval)
      : e_(e), parcels_(parcels), interval_(interval) {}

  // One 10 ms sample with a parcel every gap_us µs, coalesced as the knobs say now.
  void sample(double gap_us) {
    const double n = 10'000 / gap_us;
    const bool on =
        interval_.int_value() > 0 && static_cast<double>(interval_.int_value()) > gap_us;
    const double ppm = on ? std::max(1.0, static_cast<double>(parcels_.int_value())) : 1.0;
    parcels_sent_ += n;
    messages_ += n / ppm;
    const double func = 10e6;  // ns per sample
    // A message costs 2 µs of progress: the overhead falls as messages carry more parcels.
    overall_ += func;
    background_ += std::min(0.9 * func, n / ppm * 2'000);
    inst::counter_snapshot snap;
    time_ns_ += 10'000'000;
    snap.time_ns = time_ns_;
    snap.sequence = seq_++;
    snap.layout_generation = 1515;
    const std::string c = "/coalescing{action#acw/locality#0}/count/";
    const std::string t = "/threads{locality#0/total}/time/";
    for (auto& [name, v] :
         std::vector<std::pair<std::string, double>>{{c + "messages", messages_},
                                                     {c + "parcels", parcels_sent_},
                                                     {t + "background-work", background_},
                                                     {t + "overall", overall_}})
      snap.values.push_back({name, v, true, inst::counter_kind::monotonic});
    std::sort(snap.values.begin(), snap.values.end(),
              [](auto& a, auto& b) { return a.name < b.name; });
    e_.feed_sample(snap);
    e_.pump();
  }

 private:
  engine& e_;
  grain::knob& parcels_;
  grain::knob& interval_;
  double parcels_sent_ = 0, messages_ = 0, background_ = 0, overall_ = 0;
  std::uint64_t time_ns_ = grain::now_ns(), seq_ = 1;
};

struct knobs_at {
  grain::knob& parcels;
  grain::knob& interval;
};

knobs_at start_at(std::int64_t parcels, std::int64_t interval) {
  grain::knob& p = grain::knobs().define_int("coalescing.acw.parcels", 1, 4096, 64, "test");
  grain::knob& i = grain::knobs().define_int("coalescing.acw.interval", 0, 100000, 100, "test");
  p.set(static_cast<double>(parcels), "test start");
  i.set(static_cast<double>(interval), "test start");
  return {p, i};
}

void check_phases(std::int64_t parcels0, std::int64_t interval0) {
  auto k = start_at(parcels0, interval0);
  const auto from = grain::knobs().decisions().size();
  engine e;
  e.load_string("require('adaptive_coalescing').start{ action = 'acw' }\n", "start.lua");
  sender_feed f(e, k.parcels, k.interval);
  for (int i = 0; i < 20; ++i) f.sample(1);  // dense
  EXPECT_GE(k.parcels.int_value(), 16) << "dense: messages must carry many parcels";
  EXPECT_GT(k.interval.int_value(), 0);
  EXPECT_LE(k.interval.int_value(), 5000) << "no longer than the latency budget allows";
  for (int i = 0; i < 5; ++i) f.sample(500);  // sparse
  EXPECT_LT(k.interval.int_value(), 500) << "sparse: below the gap, no parcel waits";
  EXPECT_GE(k.parcels.int_value(), 16) << "ready for the next burst";
  for (int i = 0; i < 20; ++i) f.sample(1);  // dense again
  EXPECT_GE(k.parcels.int_value(), 16);
  EXPECT_GT(k.interval.int_value(), 0);
  bool named = false;
  auto all = grain::knobs().decisions();
  for (std::size_t i = from; i < all.size(); ++i)
    if (all[i].knob == "coalescing.acw.parcels" && all[i].rule == "adaptive_coalescing:acw")
      named = all[i].reason.find("parcels/message") != std::string::npos;
  EXPECT_TRUE(named) << "decisions carry the rule's name and the evidence";
}

TEST(AdaptiveCoalescingPolicy, FromOffFollowsDenseSparseDense) {
  check_phases(1, 0);
}

TEST(AdaptiveCoalescingPolicy, FromTheLargestFollowsDenseSparseDense) {
  check_phases(256, 5000);
}

}  // namespace
