// Knobs: typed values, clamping, callbacks, the registry, command-line values, concurrency.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "grain/knob.hpp"

namespace {

TEST(Knob, IntDefinitionAndDefaults) {
  grain::knob& k = grain::knobs().define_int("test.knob.int", 1, 16, 4, "an int knob", 1);
  EXPECT_EQ(k.name(), "test.knob.int");
  EXPECT_EQ(k.type(), grain::knob_type::integer);
  EXPECT_EQ(k.min(), 1);
  EXPECT_EQ(k.max(), 16);
  EXPECT_EQ(k.default_value(), 4);
  EXPECT_EQ(k.int_value(), 4);
  EXPECT_EQ(k.description(), "an int knob");
  EXPECT_EQ(k.describe_range(), "int [1, 16]");
  // Defining again with the same type returns the same knob; another type is an error.
  EXPECT_EQ(&grain::knobs().define_int("test.knob.int", 0, 3, 1, "again"), &k);
  EXPECT_THROW(grain::knobs().define_double("test.knob.int", 0, 1, 0, "x"), std::invalid_argument);
  EXPECT_THROW(grain::knobs().define_int("test.knob.bad", 5, 1, 3, "min > max"),
               std::invalid_argument);
  EXPECT_THROW(grain::knobs().define_int("test.knob.bad", 0, 10, 3, "step 0", 0),
               std::invalid_argument);
}

TEST(Knob, ClampIsRecorded) {
  grain::knob& k = grain::knobs().define_int("test.knob.clamp", 0, 100, 10, "clamped", 5);
  auto r = k.set(1000, "too big", "unit");
  EXPECT_EQ(k.value(), 100);
  EXPECT_TRUE(r.clamped);
  EXPECT_EQ(r.requested, 1000);
  EXPECT_EQ(r.old_value, 10);
  EXPECT_EQ(r.new_value, 100);
  EXPECT_EQ(r.rule, "unit");
  EXPECT_EQ(r.reason, "too big");
  EXPECT_EQ(r.type, grain::knob_type::integer);  // readers format the values without a lookup
  EXPECT_EQ(
      grain::knobs().define_double("test.knob.clamp.real", 0, 1, 0, "real").set(0.5, "r").type,
      grain::knob_type::real);
  r = k.set(-3, "too small");
  EXPECT_TRUE(r.clamped);
  EXPECT_EQ(k.value(), 0);
  EXPECT_EQ(r.rule, "api");
  // Integers snap to min + k*step.
  r = k.set(12, "snap");
  EXPECT_EQ(k.value(), 10);
  EXPECT_TRUE(r.clamped);
  r = k.set(15, "exact");
  EXPECT_EQ(k.value(), 15);
  EXPECT_FALSE(r.clamped);
  // The registry keeps the records, clamp included.
  auto all = grain::knobs().decisions();
  int clamps = 0;
  for (auto& d : all)
    if (d.knob == "test.knob.clamp" && d.clamped) ++clamps;
  EXPECT_EQ(clamps, 3);
}

TEST(Knob, DoubleKnob) {
  grain::knob& k = grain::knobs().define_double("test.knob.double", 0.0, 1000.0, 0.0, "lambda");
  EXPECT_EQ(k.type(), grain::knob_type::real);
  auto r = k.set(2.5, "why not");
  EXPECT_FALSE(r.clamped);
  EXPECT_DOUBLE_EQ(k.value(), 2.5);
  r = k.set(1e9, "big");
  EXPECT_TRUE(r.clamped);
  EXPECT_DOUBLE_EQ(k.value(), 1000.0);
  EXPECT_EQ(k.describe_range(), "double [0, 1000]");
  EXPECT_EQ(k.format(0.1), "0.1");
  EXPECT_DOUBLE_EQ(k.parse("3.25"), 3.25);
  EXPECT_THROW(k.parse("abc"), std::invalid_argument);
  EXPECT_THROW(k.parse(""), std::invalid_argument);
}

TEST(Knob, EnumKnob) {
  grain::knob& k = grain::knobs().define_enum("test.knob.enum", {"static", "dynamic", "guided"},
                                              "dynamic", "chunker");
  EXPECT_EQ(k.type(), grain::knob_type::enumeration);
  EXPECT_EQ(k.value(), 1);
  EXPECT_EQ(k.enum_name(), "dynamic");
  k.set(std::string_view("guided"), "try guided");
  EXPECT_EQ(k.enum_name(), "guided");
  EXPECT_EQ(k.value(), 2);
  try {
    k.set(std::string_view("nope"), "bad");
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("static, dynamic, guided"), std::string::npos);
  }
  auto r = k.set(7, "index out of range");
  EXPECT_TRUE(r.clamped);
  EXPECT_EQ(k.enum_name(), "guided");
  EXPECT_EQ(k.describe_range(), "enum {static, dynamic, guided}");
  EXPECT_EQ(k.format(0), "static");
  EXPECT_THROW(grain::knobs().define_enum("test.knob.enum2", {"a"}, "b", "bad default"),
               std::invalid_argument);
}

TEST(Knob, IntParseRejectsFractions) {
  grain::knob& k = grain::knobs().define_int("test.knob.parse", 0, 10, 0, "p");
  EXPECT_EQ(k.parse("7"), 7);
  EXPECT_THROW(k.parse("7.5"), std::invalid_argument);
  EXPECT_THROW(k.parse("7x"), std::invalid_argument);
  EXPECT_EQ(k.format(7), "7");
}

TEST(Knob, ChangeCallbacks) {
  grain::knob& k = grain::knobs().define_int("test.knob.cb", 1, 8, 8, "pool-like");
  std::vector<std::pair<double, double>> seen;
  k.on_change([&](double o, double n) { seen.emplace_back(o, n); });
  k.set(2, "shrink");
  k.set(8, "grow");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], std::make_pair(8.0, 2.0));
  EXPECT_EQ(seen[1], std::make_pair(2.0, 8.0));
  k.clear_callbacks();
  k.set(3, "after clear");
  EXPECT_EQ(seen.size(), 2u);
  // A callback may set the knob again (re-entrant writer lock).
  k.on_change([&](double, double n) {
    if (n == 5) k.set(6, "bounce");
  });
  k.set(5, "trigger bounce");
  EXPECT_EQ(k.value(), 6);
  k.clear_callbacks();
}

TEST(Knob, ResetRange) {
  grain::knob& k = grain::knobs().define_int("test.knob.range", 1, 4, 4, "pool-like");
  k.set(2, "x");
  k.reset_range(1, 16, 16);
  EXPECT_EQ(k.max(), 16);
  EXPECT_EQ(k.value(), 16);
  EXPECT_EQ(k.default_value(), 16);
}

TEST(KnobRegistry, AtNamesKnownKnobs) {
  grain::knobs().define_int("test.knob.at", 0, 1, 0, "x");
  EXPECT_EQ(&grain::knobs().at("test.knob.at"), grain::knobs().find("test.knob.at"));
  EXPECT_EQ(grain::knobs().find("test.knob.missing"), nullptr);
  try {
    grain::knobs().at("test.knob.missing");
    FAIL() << "expected out_of_range";
  } catch (const std::out_of_range& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("test.knob.missing"), std::string::npos);
    EXPECT_NE(w.find("test.knob.at"), std::string::npos) << w;
  }
  auto all = grain::knobs().all();
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1]->name(), all[i]->name());
}

TEST(KnobRegistry, ListenersSeeEveryRecord) {
  grain::knob& k = grain::knobs().define_double("test.knob.listen", 0, 10, 1, "x");
  std::vector<grain::decision_record> got;
  int id = grain::knobs().add_listener([&](const grain::decision_record& r) {
    if (r.knob == "test.knob.listen") got.push_back(r);
  });
  k.set(2, "one", "rule-a", {{"/threads/idle-rate", 0.5}});
  k.set(3, "two", "rule-b");
  grain::knobs().remove_listener(id);
  k.set(4, "three");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].rule, "rule-a");
  ASSERT_EQ(got[0].trigger.size(), 1u);
  EXPECT_EQ(got[0].trigger[0].first, "/threads/idle-rate");
  EXPECT_EQ(got[0].trigger[0].second, 0.5);
  EXPECT_GT(got[1].time_ns, 0u);
  EXPECT_GE(got[1].time_ns, got[0].time_ns);
}

TEST(KnobRegistry, HistoryIsBounded) {
  grain::knob& k = grain::knobs().define_int("test.knob.history", 0, 1000, 0, "x");
  for (int i = 0; i < 100'050; ++i) k.set(i % 1000, "fill");
  auto d = grain::knobs().decisions();
  EXPECT_EQ(d.size(), 100'000u);
  EXPECT_EQ(d.back().knob, "test.knob.history");
  EXPECT_EQ(d.back().new_value, 100'049 % 1000);
}

TEST(KnobRegistry, CommandLineValues) {
  auto& reg = grain::knobs();
  grain::knob& k = reg.define_int("test.knob.cli", 1, 64, 8, "x");
  reg.set_initial("test.knob.cli", "16");
  EXPECT_EQ(k.value(), 16);
  EXPECT_EQ(reg.decisions().back().rule, "cli");
  EXPECT_EQ(reg.decisions().back().reason, "--grain:knob=test.knob.cli=16");
  try {
    reg.set_initial("test.knob.cli", "100");
    FAIL() << "expected out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("int [1, 64]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(reg.set_initial("test.knob.cli", "many"), std::invalid_argument);
  EXPECT_EQ(k.value(), 16);

  // A knob the application defines later starts from the command-line value.
  reg.set_initial("test.knob.later", "250");
  reg.set_initial("test.knob.never", "1");
  EXPECT_EQ(reg.pending_initial(),
            (std::vector<std::string>{"test.knob.later", "test.knob.never"}));
  grain::knob& later = reg.define_int("test.knob.later", 1, 1000, 100, "stencil.nx-like");
  EXPECT_EQ(later.value(), 250);
  EXPECT_EQ(later.default_value(), 100);
  EXPECT_EQ(reg.decisions().back().rule, "cli");
  EXPECT_EQ(reg.pending_initial(), std::vector<std::string>{"test.knob.never"});
  // Out of range at definition time is an error naming the range.
  reg.set_initial("test.knob.later2", "5000");
  EXPECT_THROW(reg.define_int("test.knob.later2", 1, 1000, 100, "x"), std::out_of_range);
  reg.clear_initial();
  EXPECT_TRUE(reg.pending_initial().empty());
  // Enumerations take names.
  reg.set_initial("test.knob.later3", "b");
  EXPECT_EQ(reg.define_enum("test.knob.later3", {"a", "b"}, "a", "x").enum_name(), "b");
}

// Readers never lock and never see a torn or out-of-range value while writers set it.
TEST(KnobConcurrency, ReadersDuringSets) {
  grain::knob& k = grain::knobs().define_double("test.knob.concurrent", 0, 1e6, 1, "x");
  const std::set<double> allowed = {1.0, 0.25, 123456.789, 1e6};
  std::atomic<bool> stop{false};
  std::atomic<long> bad{0}, reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r)
    readers.emplace_back([&] {
      long n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        double v = k.value();
        if (!allowed.count(v)) bad.fetch_add(1);
        (void)k.min();
        (void)k.max();
        ++n;
      }
      reads.fetch_add(n);
    });
  std::atomic<int> callbacks{0};
  k.on_change([&](double, double) { callbacks.fetch_add(1, std::memory_order_relaxed); });
  std::vector<std::thread> writers;
  const double vals[] = {0.25, 123456.789, 1e6, 1.0};
  for (int w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      for (int i = 0; i < 5000; ++i) k.set(vals[(i + w) % 4], "race");
    });
  for (auto& t : writers) t.join();
  stop = true;
  for (auto& t : readers) t.join();
  k.clear_callbacks();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(callbacks.load(), 10000);
  EXPECT_GT(reads.load(), 0);
}

}  // namespace
