// Counter names, wildcards, the registry, reset, and the /threads formulas on fake statistics.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "fake_source.hpp"
#include "grain/clock.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/threads_counters.hpp"

using namespace grain::instrumentation;
using grain::test::fake_source;

namespace {

double value_of(counter_registry& r, const std::string& name) {
  auto v = r.value(name);
  EXPECT_TRUE(v.has_value()) << name;
  if (!v) return NAN;
  EXPECT_TRUE(v->available) << name;
  return v->value;
}

bool available(counter_registry& r, const std::string& name) {
  auto v = r.value(name);
  EXPECT_TRUE(v.has_value()) << name;
  return v && v->available;
}

}  // namespace

TEST(CounterNames, ParseFullNames) {
  auto n = parse_counter_name("/threads{locality#0/pool#default/worker#1}/idle-rate");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->object, "threads");
  EXPECT_EQ(n->instance, "locality#0/pool#default/worker#1");
  EXPECT_EQ(n->counter, "idle-rate");
  EXPECT_EQ(n->full(), "/threads{locality#0/pool#default/worker#1}/idle-rate");

  n = parse_counter_name("/threads{locality#0/total}/count/cumulative");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->counter, "count/cumulative");

  n = parse_counter_name("/app/iteration-time");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->object, "app");
  EXPECT_EQ(n->instance, "");
  EXPECT_EQ(n->counter, "iteration-time");
  EXPECT_EQ(n->full(), "/app/iteration-time");

  for (const char* bad :
       {"", "threads/idle-rate", "/", "//x", "/threads", "/threads{}/x",
        "/threads{locality#0/total", "/threads{a}x", "/threads{a}/", "/threads{a}/b}c"})
    EXPECT_FALSE(parse_counter_name(bad)) << bad;
}

TEST(CounterNames, Glob) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("*", "locality#0/pool#default/worker#1"));
  EXPECT_TRUE(glob_match("locality#0/pool#*/worker#1", "locality#0/pool#default/worker#1"));
  EXPECT_FALSE(glob_match("locality#0/pool#*/worker#1", "locality#0/pool#default/worker#11"));
  EXPECT_TRUE(glob_match("count/*", "count/cumulative"));
  EXPECT_TRUE(glob_match("*-rate", "idle-rate"));
  EXPECT_FALSE(glob_match("idle", "idle-rate"));
  EXPECT_TRUE(glob_match("a*b*c", "aXbYbZc"));
}

TEST(CounterNames, PatternsAndDefaultInstance) {
  counter_pattern all_idle("/threads{*}/idle-rate");
  EXPECT_TRUE(all_idle.matches("/threads{locality#0/pool#default/worker#1}/idle-rate"));
  EXPECT_TRUE(all_idle.matches("/threads{locality#0/total}/idle-rate"));
  EXPECT_FALSE(all_idle.matches("/threads{locality#0/total}/time/average"));

  counter_pattern total("/threads{locality#0/total}/*");
  EXPECT_TRUE(total.matches("/threads{locality#0/total}/count/cumulative"));
  EXPECT_FALSE(total.matches("/threads{locality#0/pool#default/total}/count/cumulative"));

  // No instance: locality#0/total, and counters defined without an instance.
  counter_pattern plain("/threads/idle-rate");
  EXPECT_TRUE(plain.matches("/threads{locality#0/total}/idle-rate"));
  EXPECT_FALSE(plain.matches("/threads{locality#0/pool#default/worker#0}/idle-rate"));
  EXPECT_TRUE(counter_pattern("/app/iteration-time").matches("/app/iteration-time"));
  EXPECT_TRUE(counter_pattern("/app/*").matches("/app/residual"));
  EXPECT_TRUE(counter_pattern("*").matches("/app/residual"));
  EXPECT_TRUE(counter_pattern("/*{*}/*").matches("/papi{locality#0/total}/PAPI_TOT_INS"));
  EXPECT_THROW(counter_pattern("threads/idle-rate"), std::invalid_argument);
}

TEST(CounterRegistry, FunctionsQueryAndReset) {
  counter_registry r;
  double mono = 100, gauge = 7;
  r.add_counter(
      {"/test{locality#0/total}/count/things", "count", "things", counter_kind::monotonic},
      [&] { return mono; });
  r.add_counter({"/test{locality#0/total}/level", "count", "level", counter_kind::gauge},
                [&] { return gauge; });
  r.add_counter({"/test/broken", "", "unreadable", counter_kind::raw}, [] {
    return counter_reading{0, false};
  });
  EXPECT_THROW(r.add_counter({"/test/level", "", "", counter_kind::raw}, [] { return 0.0; }),
               std::invalid_argument)
      << "/o/c is /o{locality#0/total}/c";
  EXPECT_THROW(r.add_counter({"/test{locality#0/total}/level", "", "", counter_kind::raw},
                             [] { return 0.0; }),
               std::invalid_argument);
  EXPECT_THROW(r.add_counter({"bad name", "", "", counter_kind::raw}, [] { return 0.0; }),
               std::invalid_argument);

  EXPECT_EQ(value_of(r, "/test{locality#0/total}/count/things"), 100);
  EXPECT_FALSE(available(r, "/test/broken"));
  EXPECT_FALSE(r.value("/test/nothing"));

  auto q = r.query("/test/*");  // default instance + instance-less
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[0].name, "/test/broken");  // sorted by name
  EXPECT_EQ(q[1].name, "/test{locality#0/total}/count/things");
  EXPECT_EQ(q[2].name, "/test{locality#0/total}/level");

  // Reset: monotonic counters restart from zero, gauges keep reporting the level.
  r.reset();
  EXPECT_EQ(value_of(r, "/test{locality#0/total}/count/things"), 0);
  mono = 130;
  gauge = 9;
  EXPECT_EQ(value_of(r, "/test{locality#0/total}/count/things"), 30);
  EXPECT_EQ(value_of(r, "/test{locality#0/total}/level"), 9);
}

TEST(CounterRegistry, SnapshotReusesLayout) {
  counter_registry r;
  double x = 1;
  int a = r.add_counter({"/t/b", "", "", counter_kind::raw}, [&] { return x; });
  r.add_counter({"/t/a", "", "", counter_kind::raw}, [&] { return 2 * x; });
  counter_snapshot s;
  r.sample(s);
  ASSERT_EQ(s.values.size(), 2u);
  EXPECT_EQ(s.values[0].name, "/t/a");
  EXPECT_EQ(s.values[1].value, 1);
  const auto gen = s.layout_generation;
  const char* name_storage = s.values[0].name.data();
  x = 5;
  r.sample(s);
  EXPECT_EQ(s.layout_generation, gen);
  EXPECT_EQ(s.values[0].name.data(), name_storage) << "names are not rebuilt per sample";
  EXPECT_EQ(s.find("/t/a")->value, 10);
  EXPECT_EQ(s.find("/t/zzz"), nullptr);
  r.remove(a);
  r.sample(s);
  EXPECT_NE(s.layout_generation, gen);
  ASSERT_EQ(s.values.size(), 1u);
}

TEST(ThreadsCounters, InstancesAndNames) {
  fake_source src({{"critical", 1}, {"default", 2}});
  counter_registry r;
  r.add_provider(make_threads_provider(src));
  for (const char* n : {"/threads{locality#0/pool#critical/worker#0}/idle-rate",
                        "/threads{locality#0/pool#default/worker#1}/idle-rate",
                        "/threads{locality#0/pool#default/worker#2}/count/cumulative",
                        "/threads{locality#0/pool#default/total}/time/average",
                        "/threads{locality#0/pool#critical/total}/count/active-workers",
                        "/threads{locality#0/total}/count/active-workers",
                        "/threads{locality#0/total}/management-overhead",
                        "/threads{locality#0/total}/wait-time-inflation",
                        "/threads{locality#0/total}/wait-time-inflation-per-core",
                        "/threads{locality#0/total}/queue-length"})
    EXPECT_TRUE(r.contains(n)) << n;
  EXPECT_EQ(r.list("/threads{*}/idle-rate").size(), 3u + 2u + 1u);
  EXPECT_EQ(r.list("/threads{locality#0/pool#default/worker#*}/idle-rate").size(), 2u);
  // Every counter of docs/counters.md's /threads table exists for the locality total.
  for (const char* c : {"count/cumulative",
                        "count/cumulative-phases",
                        "time/average",
                        "time/average-overhead",
                        "time/average-phase",
                        "time/average-phase-overhead",
                        "time/cumulative",
                        "time/overall",
                        "idle-rate",
                        "count/pending-accesses",
                        "count/pending-misses",
                        "count/staged-accesses",
                        "count/staged-misses",
                        "count/stolen-from",
                        "count/stolen-to",
                        "count/heavy-steals",
                        "wait-time/staged",
                        "wait-time/pending",
                        "wait-time/staged-sum",
                        "wait-time/staged-count",
                        "wait-time/pending-sum",
                        "wait-time/pending-count",
                        "time/background-work",
                        "background-overhead",
                        "network-overhead",
                        "management-overhead",
                        "wait-time-inflation"})
    EXPECT_TRUE(r.contains(std::string("/threads{locality#0/total}/") + c)) << c;
  for (auto& info : r.list("*")) {
    EXPECT_FALSE(info.unit.empty()) << info.name;
    EXPECT_FALSE(info.description.empty()) << info.name;
  }
}

TEST(ThreadsCounters, SeedFormulas) {
  fake_source src({{"default", 2}});
  counter_registry r;
  r.add_provider(make_threads_provider(src));
  // No task yet: averages are undefined, reported unavailable (never a made-up 0).
  EXPECT_FALSE(available(r, "/threads{locality#0/total}/time/average"));
  EXPECT_FALSE(available(r, "/threads{locality#0/total}/idle-rate"));
  EXPECT_EQ(value_of(r, "/threads{locality#0/total}/count/cumulative"), 0);

  // worker 0: 100 tasks x (1000 ns exec + 250 ns overhead); worker 1: 300 x (2000 + 50)
  src.run(0, 100, 1000, 250);
  src.run(1, 300, 2000, 50);
  const std::string w0 = "/threads{locality#0/pool#default/worker#0}/";
  const std::string tot = "/threads{locality#0/total}/";
  EXPECT_EQ(value_of(r, w0 + "count/cumulative"), 100);
  EXPECT_DOUBLE_EQ(value_of(r, w0 + "time/average"), 1000);          // Eq. 2
  EXPECT_DOUBLE_EQ(value_of(r, w0 + "time/average-overhead"), 250);  // Eq. 3
  EXPECT_DOUBLE_EQ(value_of(r, w0 + "idle-rate"), 250.0 / 1250.0);   // Eq. 1
  EXPECT_DOUBLE_EQ(value_of(r, w0 + "time/average-func"), 1250);     // docs/counters.md, Eq. 3.1
  EXPECT_EQ(value_of(r, tot + "count/cumulative"), 400);
  const double exec = 100 * 1000 + 300 * 2000, func = 100 * 1250 + 300 * 2050;
  EXPECT_DOUBLE_EQ(value_of(r, tot + "time/cumulative"), exec);
  EXPECT_DOUBLE_EQ(value_of(r, tot + "time/overall"), func);
  EXPECT_DOUBLE_EQ(value_of(r, tot + "time/average"), exec / 400);
  EXPECT_DOUBLE_EQ(value_of(r, tot + "time/average-overhead"), (func - exec) / 400);
  EXPECT_DOUBLE_EQ(value_of(r, tot + "idle-rate"), (func - exec) / func);
  // Eq. 4: T_o = t_o * n_t / n_c
  EXPECT_DOUBLE_EQ(value_of(r, tot + "management-overhead"), (func - exec) / 400 * 400 / 2);
  // Eq. 5-6 need t_d1: unavailable without a calibration.
  EXPECT_FALSE(available(r, tot + "wait-time-inflation"));
  EXPECT_FALSE(available(r, tot + "wait-time-inflation-per-core"));

  // Reset: everything relative to now.
  r.reset();
  EXPECT_EQ(value_of(r, tot + "count/cumulative"), 0);
  EXPECT_FALSE(available(r, tot + "time/average"));
  src.run(0, 10, 500, 500);
  EXPECT_EQ(value_of(r, tot + "count/cumulative"), 10);
  EXPECT_DOUBLE_EQ(value_of(r, tot + "time/average"), 500);
  EXPECT_DOUBLE_EQ(value_of(r, tot + "idle-rate"), 0.5);
}

TEST(ThreadsCounters, WaitTimeInflationWithCalibration) {
  fake_source src({{"default", 2}});
  counter_registry r;
  threads_options o;
  o.t_d1_ns = 900;
  r.add_provider(make_threads_provider(src, o));
  EXPECT_FALSE(available(r, "/threads/wait-time-inflation")) << "no task yet";
  src.run(0, 100, 1000, 0);
  src.run(1, 100, 1000, 0);
  EXPECT_DOUBLE_EQ(value_of(r, "/threads{locality#0/total}/wait-time-inflation"), 100);  // Eq. 5
  EXPECT_DOUBLE_EQ(value_of(r, "/threads{locality#0/total}/wait-time-inflation-per-core"),
                   100.0 * 200 / 2);  // Eq. 6
}

TEST(ThreadsCounters, QueuesStealsWaitsGauges) {
  fake_source src({{"critical", 1}, {"default", 2}});
  counter_registry r;
  r.add_provider(make_threads_provider(src));
  src.staged = {3, 4, 5};
  src.pending = {1, 0, 2};
  src.active = {1, 1};
  src.slots[1].stolen_from.add(7);
  src.slots[2].stolen_to.add(7);
  src.slots[2].heavy_steals.add(4);
  src.slots[1].staged_wait_ns.add(3000);
  src.slots[1].staged_wait_count.add(3);
  src.slots[2].pending_misses.add(11);
  src.slots[2].pending_accesses.add(20);
  src.slots[2].background_ns.add(100);
  src.slots[2].func_ns.add(1000);
  EXPECT_EQ(value_of(r, "/threads{locality#0/total}/queue-length/staged"), 12);
  EXPECT_EQ(value_of(r, "/threads{locality#0/pool#default/total}/queue-length"), 11);
  EXPECT_EQ(value_of(r, "/threads{locality#0/pool#default/total}/count/active-workers"), 1);
  EXPECT_EQ(value_of(r, "/threads{locality#0/total}/count/active-workers"), 2);
  EXPECT_EQ(value_of(r, "/threads{locality#0/total}/count/stolen-from"), 7);
  EXPECT_EQ(value_of(r, "/threads{locality#0/pool#default/worker#2}/count/stolen-to"), 7);
  EXPECT_EQ(value_of(r, "/threads{locality#0/total}/count/heavy-steals"), 4);
  EXPECT_EQ(value_of(r, "/threads{locality#0/pool#critical/total}/count/heavy-steals"), 0);
  EXPECT_EQ(value_of(r, "/threads{locality#0/total}/wait-time/staged"), 1000);
  EXPECT_FALSE(available(r, "/threads{locality#0/total}/wait-time/pending"));
  EXPECT_EQ(value_of(r, "/threads/count/pending-misses"), 11);
  EXPECT_DOUBLE_EQ(value_of(r, "/threads{locality#0/pool#default/worker#2}/background-overhead"),
                   0.1);
  // Gauges are not affected by reset.
  r.reset();
  EXPECT_EQ(value_of(r, "/threads{locality#0/total}/queue-length/staged"), 12);
  EXPECT_EQ(value_of(r, "/threads{locality#0/total}/count/stolen-from"), 0);
}

TEST(ThreadsCounters, IdlePeriodInProgressCounts) {
  fake_source src({{"default", 1}});
  counter_registry r;
  r.add_provider(make_threads_provider(src));
  src.run(0, 10, 1000, 0);  // 10 us busy
  // The worker went idle 1 ms ago and is still idle: the sampler counts it.
  src.slots[0].idle_since_ns.set(grain::now_ns() - 1'000'000);
  const double ir = value_of(r, "/threads/idle-rate");
  EXPECT_GT(ir, 0.98);
  EXPECT_LE(ir, 1.0);
  EXPECT_GE(value_of(r, "/threads/time/idle"), 1e6);
}

TEST(CounterRegistry, ExternalProvidersForCoalescingCounters) {
  // How the coalescing layer (docs/counters.md, "Counters from other parts") plugs its counters in.
  counter_registry r;
  std::atomic<std::uint64_t> parcels{0}, messages{0};
  const std::string inst = "{action#put/locality#0}";
  r.add_counter(
      {"/coalescing" + inst + "/count/parcels", "count", "parcels sent", counter_kind::monotonic},
      [&] { return static_cast<double>(parcels.load()); });
  r.add_counter(
      {"/coalescing" + inst + "/count/messages", "count", "messages sent", counter_kind::monotonic},
      [&] { return static_cast<double>(messages.load()); });
  r.add_counter({"/coalescing" + inst + "/count/average-parcels-per-message", "count",
                 "parcels per message", counter_kind::average},
                [&] {
                  auto m = messages.load();
                  return counter_reading{m ? double(parcels.load()) / double(m) : 0, m > 0};
                });
  auto h = std::make_shared<histogram>(0, 1000, 4);  // 250 ns buckets
  add_histogram(r,
                {"/coalescing" + inst + "/time/parcel-arrival-histogram", "ns",
                 "gap between parcel arrivals", counter_kind::histogram},
                h);
  EXPECT_FALSE(available(r, "/coalescing" + inst + "/count/average-parcels-per-message"));
  EXPECT_FALSE(available(r, "/coalescing" + inst + "/time/parcel-arrival-histogram"));
  parcels = 40;
  messages = 4;
  for (double v : {-1.0, 100.0, 300.0, 300.0, 999.0, 5000.0}) h->record(v);
  EXPECT_EQ(value_of(r, "/coalescing" + inst + "/count/average-parcels-per-message"), 10);
  const std::string hn = "/coalescing" + inst + "/time/parcel-arrival-histogram";
  EXPECT_DOUBLE_EQ(value_of(r, hn), (-1.0 + 100 + 300 + 300 + 999 + 5000) / 6);
  EXPECT_EQ(value_of(r, hn + "/count"), 6);
  EXPECT_EQ(value_of(r, hn + "/bucket#0"), 1);  // below 0
  EXPECT_EQ(value_of(r, hn + "/bucket#1"), 1);  // [0, 250)
  EXPECT_EQ(value_of(r, hn + "/bucket#2"), 2);  // [250, 500)
  EXPECT_EQ(value_of(r, hn + "/bucket#4"), 1);  // [750, 1000)
  EXPECT_EQ(value_of(r, hn + "/bucket#5"), 1);  // >= 1000
  EXPECT_EQ(r.list("/coalescing{*}/*").size(), 3u + 2u + 6u);
  EXPECT_EQ(r.list("/coalescing{action#*/locality#0}/count/*").size(), 3u);
  r.reset();
  EXPECT_EQ(value_of(r, hn + "/bucket#2"), 0);
  EXPECT_FALSE(available(r, hn));
  EXPECT_EQ(value_of(r, "/coalescing" + inst + "/count/parcels"), 0);
}

TEST(ThreadsCounters, PhaseInProgressCounts) {
  fake_source src({{"default", 1}});
  counter_registry r;
  r.add_provider(make_threads_provider(src));
  src.run(0, 10, 1000, 0);  // 10 us busy
  // The worker started a phase 1 ms ago that has not ended: it is busy, not frozen.
  src.slots[0].phase_since_ns.set(grain::now_ns() - 1'000'000);
  EXPECT_LT(value_of(r, "/threads/idle-rate"), 0.01);
  EXPECT_GE(value_of(r, "/threads/time/overall"), 1e6 + 1e4);
  EXPECT_GE(value_of(r, "/threads/time/cumulative"), 1e6 + 1e4);
  // Per interval: after a reset only the part of the phase since the reset counts.
  r.reset();
  const double after = value_of(r, "/threads/time/overall");
  EXPECT_LT(after, 1e6);
  EXPECT_LT(value_of(r, "/threads/idle-rate"), 0.01);
}

TEST(ThreadsCounters, PhaseBeingFoldedInIsNotCountedTwice) {
  fake_source src({{"default", 1}});
  counter_registry r;
  r.add_provider(make_threads_provider(src));
  src.run(0, 1, 1'000'000, 0);
  // The worker is adding its ending phase to exec_ns and func_ns: the reader must not add
  // (now - start) on top of a total that may already hold it, nor wait for ever.
  src.slots[0].phase_since_ns.set(grain::phase_closing);
  EXPECT_DOUBLE_EQ(value_of(r, "/threads/time/overall"), 1e6);
  src.slots[0].phase_since_ns.set(0);
  EXPECT_DOUBLE_EQ(value_of(r, "/threads/time/overall"), 1e6);
}
