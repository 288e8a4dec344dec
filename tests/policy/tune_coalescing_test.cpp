// policies-lua/tune_coalescing.lua on synthetic snapshots (no runtime, no MPI): it must not
// start its search before its metric exists (grain.tune would end for want of it), then search
// both coalescing knobs within the narrowed ranges and keep the best point it measured. The
// metric is a made-up cost of the current knob values with its minimum at (32, 1000 µs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "grain/clock.hpp"
#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace {

using grain::policy::engine;
namespace inst = grain::instrumentation;

double cost(double parcels, double interval) {
  const double a = std::log2(std::max(1.0, parcels)) - 5, b = (interval - 1000) / 1000;
  return 100 * (1 + a * a + b * b);
}

void feed(engine& e, std::uint64_t seq, bool with_metric, double value) {
  inst::counter_snapshot snap;
  snap.time_ns = grain::now_ns();
  snap.sequence = seq;
  snap.layout_generation = with_metric ? 2 : 1;
  if (with_metric) snap.values.push_back({"/app/tcw-cost", value, true, inst::counter_kind::raw});
  e.feed_sample(snap);
  e.pump();
}

std::size_t decisions_by(const std::string& rule, std::size_t from) {
  const auto all = grain::knobs().decisions();
  std::size_t n = 0;
  for (std::size_t i = from; i < all.size(); ++i) n += all[i].rule == rule;
  return n;
}

}  // namespace

TEST(TuneCoalescingPolicy, WaitsForItsMetricThenKeepsTheBestPointWithinTheRanges) {
  grain::knob& p = grain::knobs().define_int("coalescing.tcw.parcels", 1, 4096, 64, "test");
  grain::knob& i = grain::knobs().define_int("coalescing.tcw.interval", 0, 100000, 100, "test");
  p.set(64, "test start");
  i.set(100, "test start");
  const auto from = grain::knobs().decisions().size();
  engine e;
  e.load_string(
      "require('tune_coalescing').start{ action = 'tcw', metric = '/app/tcw-cost', "
      "budget = 16 }\n",
      "start.lua");
  std::uint64_t seq = 1;
  for (int k = 0; k < 20; ++k) feed(e, seq++, false, 0);
  EXPECT_EQ(decisions_by("tune_coalescing:tcw", from), 0U) << "no search without the metric";
  EXPECT_EQ(p.int_value(), 64);
  const double start_cost = cost(64, 100);
  double max_p = 0, max_i = 0;
  for (int k = 0; k < 400; ++k) {
    feed(e, seq++, true, cost(p.value(), i.value()));
    max_p = std::max(max_p, p.value());
    max_i = std::max(max_i, i.value());
  }
  EXPECT_GE(decisions_by("tune_coalescing:tcw", from), 10U) << "it searched";
  EXPECT_LE(max_p, 256) << "parcels narrowed to 1..256";
  EXPECT_LE(max_i, 5000) << "interval narrowed to 0..5000 µs";
  EXPECT_LT(cost(p.value(), i.value()), start_cost) << "it keeps a better point than its start";
}

TEST(TuneCoalescingPolicy, UnknownSettingIsAnError) {
  grain::knobs().define_int("coalescing.tcw.parcels", 1, 4096, 64, "test");
  grain::knobs().define_int("coalescing.tcw.interval", 0, 100000, 100, "test");
  engine e;
  EXPECT_THROW(
      e.load_string("require('tune_coalescing').start{ action = 'tcw', bugdet = 8 }\n", "bad.lua"),
      std::exception);
}
