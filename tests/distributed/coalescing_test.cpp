// Parcel coalescing (docs/coalescing.md): no parcel lost, duplicated or reordered for every
// knob value and with knobs changed mid-stream; the flush timer sends a queue that never
// fills; sparse traffic bypasses the queue; the /coalescing counters agree with what the
// receivers saw. Receivers record, per message, the sequence numbers of the coalesced
// action's parcels (testing.hpp's observer); a message must hold consecutive numbers, and the
// messages together every number once. With several threads posting, each thread's parcels
// keep their order across messages. A parcel that throws inside a coalesced message does not
// lose the message's other parcels (they run in one task, or inline for a direct action).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "coalescer.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/listener.hpp"
#include "testing.hpp"

namespace grain::test::coalescing {

void seq(std::int64_t) {}

namespace {
std::mutex g_m;
std::map<std::uint32_t, std::vector<std::vector<std::int64_t>>> g_messages;  // per source
}  // namespace

void record_start() {
  // Not under g_m: the observer runs under the parcel port's lock and takes g_m, so holding
  // g_m while installing it would take the two locks in the other order (TSan).
  distributed::testing::observe_messages(
      action<&seq>::info().id,
      [](std::uint32_t source, std::uint64_t, const std::vector<std::span<const char>>& ps) {
        std::vector<std::int64_t> m;
        for (auto p : ps) {
          std::int64_t v = -1;
          if (p.size() == sizeof v) std::memcpy(&v, p.data(), sizeof v);
          m.push_back(v);
        }
        std::lock_guard lock(g_m);
        g_messages[source].push_back(std::move(m));
      });
  std::lock_guard lock(g_m);
  g_messages.clear();
}

std::int64_t received_from(std::uint32_t source) {
  std::lock_guard lock(g_m);
  std::int64_t n = 0;
  for (const auto& m : g_messages[source]) n += static_cast<std::int64_t>(m.size());
  return n;
}

std::int64_t messages_from(std::uint32_t source) {
  std::lock_guard lock(g_m);
  return static_cast<std::int64_t>(g_messages[source].size());
}

// "" when the messages from `source` hold 0..n-1 once each, consecutive within a message.
std::string verify(std::uint32_t source, std::int64_t n) {
  std::lock_guard lock(g_m);
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  for (const auto& m : g_messages[source]) {
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (m[i] < 0 || m[i] >= n) return "parcel " + std::to_string(m[i]) + " out of range";
      if (i > 0 && m[i] != m[i - 1] + 1)
        return "message holds " + std::to_string(m[i - 1]) + " then " + std::to_string(m[i]);
      if (seen[static_cast<std::size_t>(m[i])]++) return "duplicate " + std::to_string(m[i]);
    }
  }
  for (std::int64_t i = 0; i < n; ++i)
    if (!seen[static_cast<std::size_t>(i)]) return "lost parcel " + std::to_string(i);
  return "";
}

// "" when the messages from `source` hold, per thread t, the values (t << 32) + i for
// i = 0..counts[t]-1 once each and in that order across the messages (as they arrived).
std::string verify_threads(std::uint32_t source, std::vector<std::int64_t> counts) {
  std::lock_guard lock(g_m);
  const auto threads = static_cast<std::int64_t>(counts.size());
  std::vector<std::int64_t> next(counts.size(), 0);
  for (const auto& m : g_messages[source])
    for (std::int64_t v : m) {
      const std::int64_t t = v >> 32, i = v & 0xffffffff;
      if (t < 0 || t >= threads) return "value " + std::to_string(v) + " from no thread";
      if (i != next[static_cast<std::size_t>(t)])
        return "thread " + std::to_string(t) + ": parcel " + std::to_string(i) + " where " +
               std::to_string(next[static_cast<std::size_t>(t)]) + " was due";
      ++next[static_cast<std::size_t>(t)];
    }
  for (std::size_t t = 0; t < counts.size(); ++t)
    if (next[t] != counts[t])
      return "thread " + std::to_string(t) + ": " + std::to_string(next[t]) + " of " +
             std::to_string(counts[t]) + " parcels arrived";
  return "";
}

// Parcels of `picky` and `picky_direct` that ran here, in the order they ran; multiples of
// 10 plus 3 throw instead.
std::vector<std::int64_t> g_ran;
void run_picky(std::int64_t i) {
  if (i % 10 == 3) throw std::runtime_error("picky: " + std::to_string(i) + " refused");
  std::lock_guard lock(g_m);
  g_ran.push_back(i);
}
void picky(std::int64_t i) {
  run_picky(i);
}
void picky_direct(std::int64_t i) {
  run_picky(i);
}
std::vector<std::int64_t> picky_ran() {
  std::lock_guard lock(g_m);
  return g_ran;
}
// Coalesced calls: each is answered with its own result, or its own error.
std::int64_t twice_unless_three(std::int64_t v) {
  if (v % 10 == 3) throw std::runtime_error("three: " + std::to_string(v));
  return 2 * v;
}

void picky_reset() {
  std::lock_guard lock(g_m);
  g_ran.clear();
}

void set_knobs(std::int64_t parcels, std::int64_t interval) {
  knobs().at("coalescing.seq.parcels").set(static_cast<double>(parcels), "test");
  knobs().at("coalescing.seq.interval").set(static_cast<double>(interval), "test");
}

// This locality sends 0..n-1 to every other locality, interleaved.
void stream(std::int64_t n, std::int64_t parcels, std::int64_t interval) {
  enable_coalescing(action<&seq>{});
  set_knobs(parcels, interval);
  const auto all = find_all_localities();
  for (std::int64_t i = 0; i < n; ++i)
    for (locality l : all)
      if (l != find_here()) post(l, action<&seq>{}, i);
}

// This locality's /coalescing counter `what` of `action` ("": all actions, the total); -1 when
// it is not there.
double coalescing_counter(const std::string& action, const std::string& what) {
  const std::string here = "locality#" + std::to_string(find_here().rank());
  const std::string name = "/coalescing{" +
                           (action.empty() ? here + "/total" : "action#" + action + "/" + here) +
                           "}/" + what;
  auto v = instrumentation::registry().value(name);
  return v && v->available ? v->value : -1;
}

double local_counter(const std::string& what) {
  return coalescing_counter("seq", what);
}

double messages_sent() {
  return local_counter("count/messages");
}

// Parcels per message from `source`, in the order the messages arrived.
std::vector<std::int64_t> message_sizes(std::uint32_t source) {
  std::lock_guard lock(g_m);
  std::vector<std::int64_t> n;
  for (const auto& m : g_messages[source]) n.push_back(static_cast<std::int64_t>(m.size()));
  return n;
}

double histogram_count() {
  return local_counter("time/parcel-arrival-histogram/count");
}

namespace {

bool distributed_run() {
  return get_num_localities() > 1;
}

void record_everywhere() {
  for (locality l : find_all_localities()) async(l, action<&record_start>{}).get();
}

// Waits (at most 20 s) until `dest` has n parcels from `source`, then checks them.
void expect_complete(locality dest, std::uint32_t source, std::int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  while (async(dest, action<&received_from>{}, source).get() < n &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(async(dest, action<&verify>{}, source, n).get(), "")
      << "from locality#" << source << " to locality#" << dest.rank();
}

std::int64_t messages_received_from(std::uint32_t source) {
  std::int64_t m = 0;
  for (locality l : find_all_localities())
    if (l.rank() != source) m += async(l, action<&messages_from>{}, source).get();
  return m;
}

}  // namespace

TEST(Coalescing, AllToAllNothingLostOrReorderedForEveryKnobValue) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  const std::int64_t n = 1500;
  const std::vector<std::pair<std::int64_t, std::int64_t>> settings = {
      {1, 0}, {1, 1000}, {2, 1}, {16, 10}, {64, 100}, {256, 5000}, {4096, 100000}};
  for (auto [parcels, interval] : settings) {
    SCOPED_TRACE("parcels " + std::to_string(parcels) + ", interval " + std::to_string(interval));
    record_everywhere();
    std::vector<double> before;
    for (locality l : find_all_localities()) {
      async(l, action<&stream>{}, std::int64_t(0), parcels, interval).get();  // knobs defined
      before.push_back(async(l, action<&messages_sent>{}).get());
    }
    std::vector<future<void>> fs;
    for (locality l : find_all_localities())
      fs.push_back(async(l, action<&stream>{}, n, parcels, interval));
    for (auto& f : fs) f.get();
    for (locality dest : find_all_localities())
      for (locality src : find_all_localities())
        if (src != dest) expect_complete(dest, src.rank(), n);
    // The senders' message counts are the messages the receivers saw.
    for (locality src : find_all_localities()) {
      EXPECT_EQ(async(src, action<&messages_sent>{}).get() - before[src.rank()],
                static_cast<double>(messages_received_from(src.rank())));
    }
    if (parcels == 1 || interval == 0) {
      EXPECT_EQ(messages_received_from(0), n * (get_num_localities() - 1));
    }
  }
}

TEST(Coalescing, HundredsOfKnobChangesMidStream) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  record_everywhere();
  stream(0, 64, 100);
  const double m0 = messages_sent(), p0 = local_counter("count/parcels");
  std::atomic<bool> done{false};
  std::atomic<int> changes{0};
  // Every change happens while parcels flow: the stream goes on until 300 changes were made.
  std::thread changer([&] {
    std::mt19937 rng(15);
    const char* names[] = {"coalescing.seq.parcels", "coalescing.seq.interval",
                           "coalescing.max-bytes"};
    while (!done) {
      const int k = static_cast<int>(rng() % 3);
      const double v = k == 0   ? static_cast<double>(1 + rng() % 300)
                       : k == 1 ? static_cast<double>(rng() % 3000)
                                : static_cast<double>(1024 + rng() % 8192);
      knobs().at(names[k]).set(v, "test: random change");
      ++changes;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  const auto all = find_all_localities();
  std::int64_t n = 0;
  for (; n < 20000 || changes < 300; ++n)
    for (locality l : all)
      if (l != find_here()) post(l, action<&seq>{}, n);
  done = true;
  changer.join();
  knobs().at("coalescing.max-bytes").set(1 << 20, "test: back to the default");
  for (locality dest : all) {
    if (dest != find_here()) expect_complete(dest, 0, n);
  }
  EXPECT_EQ(local_counter("count/parcels") - p0,
            static_cast<double>(n * (get_num_localities() - 1)));
  EXPECT_EQ(messages_sent() - m0, static_cast<double>(messages_received_from(0)));
}

TEST(Coalescing, TimerSendsAQueueThatNeverFills) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  record_everywhere();
  stream(0, 4096, 50000);  // 50 ms: the five posts below come well within it
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // the last parcel is older
  const double m0 = messages_sent();
  const double flushes0 = coalescing_counter("", "count/timer-flushes");
  const locality dest(1);
  for (std::int64_t i = 0; i < 5; ++i) post(dest, action<&seq>{}, i);
  expect_complete(dest, 0, 5);
  // The first parcel left alone (nothing came before it within the interval); the other
  // four waited for the timer.
  EXPECT_EQ(async(dest, action<&messages_from>{}, std::uint32_t(0)).get(), 2);
  EXPECT_EQ(messages_sent() - m0, 2);
  EXPECT_EQ(coalescing_counter("", "count/timer-flushes") - flushes0, 1);
}

TEST(Coalescing, SparseTrafficBypassesTheQueue) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  record_everywhere();
  stream(0, 64, 1000);                  // 1 ms; the posts come 5 ms apart
  instrumentation::registry().reset();  // the arrival average covers this test only
  const double m0 = messages_sent();
  const locality dest(1);
  for (std::int64_t i = 0; i < 5; ++i) {
    post(dest, action<&seq>{}, i);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  expect_complete(dest, 0, 5);
  EXPECT_EQ(async(dest, action<&messages_from>{}, std::uint32_t(0)).get(), 5);
  EXPECT_EQ(messages_sent() - m0, 5);
  EXPECT_GT(local_counter("time/average-parcel-arrival"), 1e6);  // ns: the gaps were ≥ 5 ms
}

TEST(Coalescing, FullQueueLeavesAtOnceAndCountersAgree) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  record_everywhere();
  stream(0, 8, 100000);  // 100 ms: only a full queue can leave before that
  instrumentation::registry().reset();
  const locality dest(1);
  for (std::int64_t i = 0; i < 17; ++i) post(dest, action<&seq>{}, i);
  // 1 alone (first after a pause), then two full messages of 8: all within milliseconds.
  const auto t0 = std::chrono::steady_clock::now();
  while (async(dest, action<&received_from>{}, std::uint32_t(0)).get() < 17 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(async(dest, action<&verify>{}, std::uint32_t(0), std::int64_t(17)).get(), "");
  EXPECT_EQ(async(dest, action<&messages_from>{}, std::uint32_t(0)).get(), 3);
  EXPECT_EQ(local_counter("count/parcels"), 17);
  EXPECT_EQ(local_counter("count/messages"), 3);
  EXPECT_DOUBLE_EQ(local_counter("count/average-parcels-per-message"), 17.0 / 3.0);
}

namespace {

// The coalescer's events (coalescing.event-parcels) as a policy would get them.
struct event_log : instrumentation::listener {
  std::mutex m;
  std::vector<instrumentation::app_event> events;
  void on_event(const instrumentation::app_event& e) override {
    if (e.name != "coalescing.seq") return;
    std::lock_guard lock(m);
    events.push_back(e);
  }
};

// 10 batches of 100 parcels, 2 ms apart; returns the coalescing.seq events they raised.
std::vector<instrumentation::app_event> batches_with_events(std::int64_t every) {
  event_log log;
  instrumentation::add_listener(&log);
  knobs().at("coalescing.event-parcels").set(static_cast<double>(every), "test");
  const locality dest(1);
  for (std::int64_t i = 0; i < 1000; ++i) {
    post(dest, action<&seq>{}, i);
    if (i % 100 == 99) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  knobs().at("coalescing.event-parcels").set(0, "test: back to the default");
  instrumentation::remove_listener(&log);
  expect_complete(dest, 0, 1000);
  // The senders' events; the flush timer's, if any (it sends the last batch's tail of 4), are
  // left out.
  std::lock_guard lock(log.m);
  std::vector<instrumentation::app_event> senders;
  for (const auto& e : log.events)
    if (e.get("by_timer") == 0) senders.push_back(e);
  return senders;
}

}  // namespace

TEST(Coalescing, EventsEveryNParcelsCarryTheRunningTotals) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  record_everywhere();
  // A 100 ms interval: a batch's tail of 4 waits for the next batch rather than for the flush
  // timer, whose event would take the 1 ms window from the next batch's first sender event
  // when a loaded machine makes the timer late.
  stream(0, 16, 100000);
  EXPECT_TRUE(batches_with_events(0).empty()) << "coalescing.event-parcels 0: no events";
  record_everywhere();
  const double p0 = local_counter("count/parcels");
  const auto ev = batches_with_events(100);
  // The first parcel finds the last event long ago; then one every 100 parcels: the 101st
  // of each batch comes after the 2 ms pause, past the 1 ms that must lie between two events.
  ASSERT_EQ(ev.size(), 10U);
  for (std::size_t k = 0; k < ev.size(); ++k) {
    // Running totals of the coalescer's own (never reset, unlike the counters).
    EXPECT_EQ(ev[k].get("parcels") - ev[0].get("parcels"), 100.0 * static_cast<double>(k))
        << "event " << k;
    EXPECT_LE(ev[k].get("messages"), ev[k].get("parcels"));
    EXPECT_GE(ev[k].get("gaps"), ev[k].get("parcels") - get_num_localities() + 1);
    if (k > 0) {
      EXPECT_GT(ev[k].get("messages"), ev[k - 1].get("messages")) << "16 parcels fill a message";
      EXPECT_GT(ev[k].get("bytes"), ev[k - 1].get("bytes"));
      EXPECT_GT(ev[k].get("gap_ns"), ev[k - 1].get("gap_ns") + 2e6) << "the 2 ms pause";
      EXPECT_GE(ev[k].time_ns - ev[k - 1].time_ns, 1'000'000U);
    }
  }
  EXPECT_EQ(local_counter("count/parcels"), p0 + 1000);
}

// A queue the flush timer has to send raises an event at once, without waiting for
// coalescing.event-parcels more parcels (at one parcel per round trip that could take
// hundreds of intervals); it does not move the every-N window of the senders' events.
TEST(Coalescing, ATimerFlushRaisesAnEventWithoutWaitingForNParcels) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  record_everywhere();
  stream(0, 16, 200);
  event_log log;
  instrumentation::add_listener(&log);
  knobs().at("coalescing.event-parcels").set(1000, "test");
  const auto timer_flushes = [] { return coalescing_counter("", "count/timer-flushes"); };
  const double flushes0 = timer_flushes();
  const locality dest(1);
  // The first parcel goes alone (nothing before it); the next 4 wait for 12 more that never
  // come, until the timer sends them 200 µs after the second. A senders' event, if any, comes
  // with a parcel; the timer's comes 200 µs later.
  const std::uint64_t t0 = now_ns();
  for (std::int64_t i = 0; i < 5; ++i) post(dest, action<&seq>{}, i);
  std::optional<instrumentation::app_event> by_timer;
  const auto start = std::chrono::steady_clock::now();
  while (!by_timer && std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard lock(log.m);
    for (const auto& e : log.events)
      if (e.time_ns >= t0 + 200'000) by_timer = e;
  }
  knobs().at("coalescing.event-parcels").set(0, "test: back to the default");
  instrumentation::remove_listener(&log);
  expect_complete(dest, 0, 5);
  ASSERT_TRUE(by_timer.has_value()) << "the timer's flush raised no event";
  EXPECT_GE(timer_flushes(), flushes0 + 1);
  EXPECT_GE(by_timer->get("timer_flushes"), 1.0);
  EXPECT_EQ(by_timer->get("by_timer"), 1.0);
  std::lock_guard lock(log.m);
  EXPECT_LE(log.events.size(), 2U) << "one from the senders at most, and the timer's";
}

TEST(Coalescing, ConcurrentPostersKeepEachThreadsOrderUnderKnobChanges) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  record_everywhere();
  stream(0, 64, 100);
  const double p0 = local_counter("count/parcels"), m0 = messages_sent();
  // Three threads post into the same queues while the knobs change under them: each
  // thread's parcels must arrive in its order, whichever thread's parcels share a message.
  constexpr std::size_t threads = 3;
  std::atomic<bool> done{false};
  std::atomic<int> changes{0};
  std::thread changer([&] {
    std::mt19937 rng(151);
    while (!done) {
      const int k = static_cast<int>(rng() % 3);
      if (k == 0)
        knobs()
            .at("coalescing.seq.parcels")
            .set(static_cast<double>(1 + rng() % 300), "test: random change");
      else if (k == 1)
        knobs()
            .at("coalescing.seq.interval")
            .set(static_cast<double>(rng() % 3000), "test: random change");
      else
        knobs()
            .at("coalescing.max-bytes")
            .set(static_cast<double>(1024 + rng() % 8192), "test: random change");
      ++changes;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  const auto all = find_all_localities();
  // Each thread posts 3,000 parcels to every other locality, and more until 100 changes
  // were made.
  std::vector<std::int64_t> counts(threads, 0);
  std::vector<std::thread> posters;
  for (std::size_t t = 0; t < threads; ++t)
    posters.emplace_back([t, &all, &changes, &counts] {
      std::int64_t i = 0;
      for (; i < 3000 || changes < 100; ++i)
        for (locality l : all)
          if (l != find_here()) post(l, action<&seq>{}, (static_cast<std::int64_t>(t) << 32) + i);
      counts[t] = i;
    });
  for (auto& p : posters) p.join();
  done = true;
  changer.join();
  knobs().at("coalescing.max-bytes").set(1 << 20, "test: back to the default");
  std::int64_t per_dest = 0;
  for (std::int64_t c : counts) per_dest += c;
  for (locality dest : all) {
    if (dest == find_here()) continue;
    const auto t0 = std::chrono::steady_clock::now();
    while (async(dest, action<&received_from>{}, std::uint32_t(0)).get() < per_dest &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(async(dest, action<&verify_threads>{}, std::uint32_t(0), counts).get(), "")
        << "to locality#" << dest.rank();
  }
  // Exact counts: every parcel once, every message seen by a receiver.
  EXPECT_EQ(local_counter("count/parcels") - p0,
            static_cast<double>(per_dest * (get_num_localities() - 1)));
  EXPECT_EQ(messages_sent() - m0, static_cast<double>(messages_received_from(0)));
}

TEST(Coalescing, ArrivalHistogramCountsEveryGapOnceItsMessageLeft) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  record_everywhere();
  stream(0, 8, 100000);  // only full queues leave
  const locality dest(1);
  post(dest, action<&seq>{}, std::int64_t(0));  // alone: the first after a pause
  expect_complete(dest, 0, 1);
  const double h0 = histogram_count();
  for (std::int64_t i = 1; i < 17; ++i) post(dest, action<&seq>{}, i);  // two full messages
  expect_complete(dest, 0, 17);
  // 16 parcels with a predecessor in their queue: 16 gaps, in the histogram once each.
  EXPECT_EQ(histogram_count() - h0, 16);
  double buckets = 0;
  for (int k = 0; k < 22; ++k)
    buckets += local_counter("time/parcel-arrival-histogram/bucket#" + std::to_string(k));
  EXPECT_GE(buckets, 16);
}

TEST(Coalescing, ByteCapSendsTheQueueBeforeAParcelWouldOverflowIt) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  record_everywhere();
  stream(0, 4096, 100000);  // only the byte cap (or the 100 ms timer) sends a queue
  knobs().at("coalescing.max-bytes").set(1024, "test");
  std::this_thread::sleep_for(std::chrono::milliseconds(110));  // the first goes alone
  // A batch's headers are 56 bytes, a parcel of seq 4 + 8: 80 parcels make 1,016 bytes, an
  // 81st would make 1,028 > 1,024, so it goes into the next message.
  const locality dest(1);
  for (std::int64_t i = 0; i < 162; ++i) post(dest, action<&seq>{}, i);
  expect_complete(dest, 0, 162);  // the last one after the timer's 100 ms
  knobs().at("coalescing.max-bytes").set(1 << 20, "test: back to the default");
  EXPECT_EQ(async(dest, action<&message_sizes>{}, std::uint32_t(0)).get(),
            (std::vector<std::int64_t>{1, 80, 80, 1}));
}

namespace {

// Posts 0..200 of action A to locality 1, coalesced 50 to a message, and checks that every
// parcel but the 20 that throw ran there once, each message's parcels in order.
template <class A>
void throwing_parcels_lose_nothing(const std::string& knob) {
  const locality dest(1);
  async(dest, action<&picky_reset>{}).get();
  enable_coalescing(A{});
  knobs().at("coalescing." + knob + ".parcels").set(50, "test");
  knobs().at("coalescing." + knob + ".interval").set(100000, "test");  // only full ones leave
  const auto messages = [&] { return coalescing_counter(knob, "count/messages"); };
  const double m0 = messages();
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // the first goes alone
  constexpr std::int64_t n = 201;                               // 1 + 4 messages of 50
  for (std::int64_t i = 0; i < n; ++i) post(dest, A{}, i);
  std::vector<std::int64_t> ran;
  const auto t0 = std::chrono::steady_clock::now();
  while ((ran = async(dest, action<&picky_ran>{}).get()).size() < 181 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(messages() - m0, 5) << "1 alone, then 4 full messages of 50";
  ASSERT_EQ(ran.size(), 181U) << "every parcel but the 20 that threw";
  std::set<std::int64_t> once(ran.begin(), ran.end());
  EXPECT_EQ(once.size(), ran.size()) << "a parcel ran twice";
  for (std::int64_t i = 0; i < n; ++i)
    EXPECT_EQ(once.count(i), i % 10 == 3 ? 0U : 1U) << "parcel " << i;
  // The parcels of one message (1..50, 51..100, ...) ran in their order.
  for (std::int64_t k = 0; k < 4; ++k) {
    std::vector<std::int64_t> mine;
    for (std::int64_t v : ran)
      if (v > 50 * k && v <= 50 * (k + 1)) mine.push_back(v);
    EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end())) << "message " << k + 1;
  }
}

}  // namespace

TEST(Coalescing, AThrowingParcelDoesNotLoseTheRestOfItsMessage) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  throwing_parcels_lose_nothing<action<&picky>>("picky");
}

TEST(Coalescing, AThrowingDirectParcelDoesNotLoseTheRestOfItsMessage) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  throwing_parcels_lose_nothing<direct_action<&picky_direct>>("picky_direct");
}

// Calls of a coalesced action travel in batches (one task runs a message's parcels straight
// from its bytes) and each is answered: its own value, or the error it threw.
TEST(Coalescing, CoalescedCallsAreEachAnsweredWithTheirOwnResultOrError) {
  if (!distributed_run()) GTEST_SKIP() << "one locality: nothing to coalesce";
  const locality dest(1);
  enable_coalescing(action<&twice_unless_three>{});
  knobs().at("coalescing.twice_unless_three.parcels").set(25, "test");
  knobs().at("coalescing.twice_unless_three.interval").set(100000, "test");
  const auto sent = [] { return coalescing_counter("twice_unless_three", "count/messages"); };
  const double m0 = sent();
  constexpr std::int64_t n = 101;  // the first alone (nothing before it), then 4 full messages
  std::vector<future<std::int64_t>> fs;
  for (std::int64_t i = 0; i < n; ++i) fs.push_back(async(dest, action<&twice_unless_three>{}, i));
  for (std::int64_t i = 0; i < n; ++i) {
    SCOPED_TRACE(i);
    if (i % 10 == 3) {
      try {
        fs[static_cast<std::size_t>(i)].get();
        ADD_FAILURE() << "no error";
      } catch (const remote_exception& e) {
        EXPECT_NE(std::string(e.what()).find("three: " + std::to_string(i)), std::string::npos)
            << e.what();
      }
    } else {
      EXPECT_EQ(fs[static_cast<std::size_t>(i)].get(), 2 * i);
    }
  }
  EXPECT_EQ(sent() - m0, 5) << "1 alone, then 4 full messages of 25";
}

// The coalescer puts a gap into the arrival histogram's bucket in integer arithmetic; the
// histogram's own bucket_of (doubles) must agree at every edge.
TEST(Coalescing, GapBucketsAreTheHistogramsBuckets) {
  const instrumentation::histogram h(0, static_cast<double>(distributed::gap_histogram_range_ns),
                                     distributed::gap_histogram_buckets);
  constexpr std::uint64_t width =
      distributed::gap_histogram_range_ns / distributed::gap_histogram_buckets;
  for (std::uint64_t k = 0; k <= distributed::gap_histogram_buckets + 1; ++k)
    for (std::uint64_t gap : {k * width - 1, k * width, k * width + 1, k * width + width / 2}) {
      if (k == 0 && gap > width) continue;  // 0 - 1 wrapped
      EXPECT_EQ(distributed::gap_bucket(gap), h.bucket_of(static_cast<double>(gap))) << gap;
    }
  EXPECT_EQ(distributed::gap_bucket(~0ULL), distributed::gap_histogram_buckets + 1);
}

}  // namespace grain::test::coalescing
