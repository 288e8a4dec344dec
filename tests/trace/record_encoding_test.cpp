// The compact records a worker writes on the task path (instrumentation/src/trace/record.hpp,
// recorder.hpp): what the recorder writes decodes back to the events it was given, across chunk
// boundaries and gaps longer than a head word's delta, with time never going back on a worker;
// an unrelated task's events take 14 bytes each of the worker's buffer (issue 13's target: at
// most 24), a child's of the worker's innermost open task 6, and a child's of the same kind 4
// (the short Enters, whose parent and GUID the decoder recovers from the regions it saw open).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "trace/recorder.hpp"

namespace {

using namespace grain::instrumentation::trace_detail;

// The recorder publishes full chunks through the back end's chunk_published(), nothing else.
class null_backend final : public backend {
 public:
  void open_workers(session_core&) override {}
  void sample(session_core&, const grain::instrumentation::counter_snapshot&) override {}
  void knob_value(session_core&, const std::string&, double, std::uint64_t) override {}
  void decision(session_core&, const grain::decision_record&, std::uint64_t) override {}
  void event(session_core&, const event_record&, std::uint64_t) override {}
  void finalize(session_core&, std::uint64_t, grain::instrumentation::trace_stats&) override {}
};

struct recording {
  session_core s;
  recording() {
    s.workers = std::vector<worker_buf>(1);
    s.worker_bufs = s.workers.data();
    s.worker_count = 1;
    s.be = std::make_unique<null_backend>();
  }
  // Every record of worker 0 so far, chunk by chunk in order, through the worker's decoder.
  std::vector<rec> decoded() {
    worker_buf& b = s.workers[0];
    std::vector<rec> out;
    auto add = [&](const unit* p, const unit* e) {
      b.decoder.decode(p, e, [&](const rec& r) { out.push_back(r); });
    };
    for (chunk* c = b.out.take_published(); c;) {
      chunk* next = c->next;
      add(c->units, c->units + c->count);
      b.out.give_back(c);
      c = next;
    }
    if (b.out.current) add(b.out.current->units, b.out.cur);
    return out;
  }
};

// A decoded record against the one expected: kind, time, GUID and parent (regions differ in how
// each test knows them).
void expect_event(const rec& got, const rec& want) {
  EXPECT_EQ(got.kind, want.kind);
  EXPECT_EQ(got.ts, want.ts);
  EXPECT_EQ(got.guid, want.guid);
  EXPECT_EQ(got.parent, want.parent);
}

TEST(TraceRecords, DecodeGivesBackWhatTheRecorderWasGiven) {
  recording r;
  const char* fib = "fib";
  const char* other = "other";
  const grain::task_info a{11, 0, fib}, b{12, 11, other}, c{13, 12, fib};
  const std::uint64_t t0 = 5'000'000'000;
  const std::uint64_t long_gap = std::uint64_t{200} * 1'000'000'000;  // > 137 s
  phase_begin(r.s, 0, a, t0);
  phase_begin(r.s, 0, b, t0 + 7);
  phase_begin(r.s, 0, c, t0 + 3);  // earlier than the last record: clamped to t0 + 7
  phase_end(r.s, 0, c, true, t0 + long_gap);
  phase_end(r.s, 0, b, true, t0 + long_gap + 1);
  phase_end(r.s, 0, a, true, t0 + long_gap + 1);
  idle_begin(r.s, 0, t0 + long_gap + 40);
  idle_end(r.s, 0, t0 + long_gap + 90);
  const auto recs = r.decoded();
  ASSERT_EQ(recs.size(), 8u);
  const std::uint32_t ra = recs[0].region, rb = recs[1].region;
  EXPECT_NE(ra, idle_region);
  EXPECT_NE(ra, rb);
  const rec w[] = {
      {t0, 11, 0, ra, rec_enter},
      {t0 + 7, 12, 11, rb, rec_enter},
      {t0 + 7, 13, 12, ra, rec_enter},
      {t0 + long_gap, 0, 0, ra, rec_leave},
      {t0 + long_gap + 1, 0, 0, rb, rec_leave},
      {t0 + long_gap + 1, 0, 0, ra, rec_leave},
      {t0 + long_gap + 40, 0, 0, idle_region, rec_enter},
      {t0 + long_gap + 90, 0, 0, idle_region, rec_leave},
  };
  for (std::size_t i = 0; i < recs.size(); ++i) {
    SCOPED_TRACE(i);
    expect_event(recs[i], w[i]);
    EXPECT_EQ(recs[i].region, w[i].region);
  }
}

TEST(TraceRecords, ChunksDecodeInOrderAndAnUnrelatedTaskEventTakes14Bytes) {
  recording r;
  constexpr unsigned tasks = 40'000;  // 280,000 units: several 65,533-unit chunks
  std::uint64_t ts = 1'000'000;
  std::vector<std::uint64_t> want_ts;
  for (unsigned i = 0; i < tasks; ++i) {
    const grain::task_info t{(1ull << 40) | (i + 1), (1ull << 40) | i, "fib"};
    // Deltas of every size up to 2^20 ns, the parents' GUIDs unrelated to the children's.
    ts += (i * 2654435761u) % (1u << 20);
    phase_begin(r.s, 0, t, ts);
    want_ts.push_back(ts);
    ts += i % 97;
    phase_end(r.s, 0, t, true, ts);
    want_ts.push_back(ts);
  }
  const auto& b = r.s.workers[0];
  EXPECT_GT(b.out.units_published, 0u);
  const auto recs = r.decoded();
  ASSERT_EQ(recs.size(), want_ts.size());
  for (std::size_t i = 0; i < recs.size(); ++i) {
    if (recs[i].ts != want_ts[i])
      FAIL() << "record " << i << ": " << recs[i].ts << " != " << want_ts[i];
    if (i % 2 == 0 && recs[i].guid != ((1ull << 40) | (i / 2 + 1))) FAIL() << "record " << i;
  }
  // An Enter of 24 bytes and a Leave of 4, plus a time record per chunk.
  const double per_event = static_cast<double>(b.out.units_written() * 4) / (2.0 * tasks);
  EXPECT_GE(per_event, 14.0);
  EXPECT_LT(per_event, 14.01);
  EXPECT_EQ(b.events, 2u * tasks);
}

// A child of the innermost open task takes one unit when it is of its parent's kind and its GUID
// is within 2^15 of the parent's, two when the GUID is within 2^24 (the edges fit, one past them
// takes the six-unit Enter); the decoder gives the GUIDs and parents back.
TEST(TraceRecords, ChildEntersAreShortAndDecodeTheirIds) {
  recording r;
  const std::uint64_t root = (3ull << 40) | 5'000'000;
  const std::uint64_t lo = root - child_delta_bias;             // the most negative delta
  const std::uint64_t hi = root + child_delta_bias - 1;         // the most positive
  const std::uint64_t beyond_lo = root - child_delta_bias - 1;  // one past each edge
  const std::uint64_t beyond_hi = root + child_delta_bias;
  const std::uint64_t other_worker = (4ull << 40) | 17;  // a GUID far away
  const char* fib = "fib";
  std::uint64_t ts = 1'000'000;
  std::vector<rec> want;
  auto begin = [&](std::uint64_t guid, std::uint64_t parent) {
    ts += 50;
    phase_begin(r.s, 0, grain::task_info{guid, parent, fib}, ts);
    want.push_back({ts, guid, parent, 0, rec_enter});
  };
  auto end = [&](std::uint64_t guid, std::uint64_t parent) {
    ts += 30;
    phase_end(r.s, 0, grain::task_info{guid, parent, fib}, true, ts);
    want.push_back({ts, 0, 0, 0, rec_leave});
  };
  const auto& b = r.s.workers[0];
  begin(root, 1);  // nothing open: six units
  const auto after_root = b.out.units_written();
  for (std::uint64_t g : {lo, hi}) {
    begin(g, root);
    end(g, root);
  }
  EXPECT_EQ(b.out.units_written() - after_root, 6u) << "two 2-unit Enters and 1-unit Leaves";
  for (std::uint64_t g : {root - same_delta_bias, root + same_delta_bias - 1}) {
    const auto before = b.out.units_written();
    begin(g, root);
    EXPECT_EQ(b.out.units_written() - before, 1u) << g;
    end(g, root);
  }
  for (std::uint64_t g : {root - same_delta_bias - 1, root + same_delta_bias}) {
    const auto before = b.out.units_written();
    begin(g, root);
    EXPECT_EQ(b.out.units_written() - before, 2u) << g;
    end(g, root);
  }
  for (std::uint64_t g : {beyond_lo, beyond_hi, other_worker}) {
    const auto before = b.out.units_written();
    begin(g, root);
    EXPECT_EQ(b.out.units_written() - before, 6u) << g;
    begin(g + 1, g);  // its own child is short again, below a six-unit parent
    EXPECT_EQ(b.out.units_written() - before, 7u) << g;
    end(g + 1, g);
    end(g, root);
  }
  // A task whose parent is open but not innermost names its parent in full.
  begin(root + 10, root);
  {
    const auto before = b.out.units_written();
    begin(root + 11, root);
    EXPECT_EQ(b.out.units_written() - before, 6u);
    end(root + 11, root);
  }
  end(root + 10, root);
  // A child of another kind takes the 2-unit record, and its Leave names its own region.
  {
    const auto before = b.out.units_written();
    ts += 50;
    phase_begin(r.s, 0, grain::task_info{root + 20, root, "leaf"}, ts);
    want.push_back({ts, root + 20, root, 0, rec_enter});
    EXPECT_EQ(b.out.units_written() - before, 2u);
    ts += 30;
    phase_end(r.s, 0, grain::task_info{root + 20, root, "leaf"}, true, ts);
    want.push_back({ts, 0, 0, 1, rec_leave});
  }
  end(root, 1);
  const auto recs = r.decoded();
  ASSERT_EQ(recs.size(), want.size());
  for (std::size_t i = 0; i < recs.size(); ++i) {
    SCOPED_TRACE(i);
    expect_event(recs[i], want[i]);
    // Regions: the root's kind everywhere but the "leaf" child's Enter and Leave.
    const bool leaf = i + 3 == recs.size() || i + 2 == recs.size();
    if (leaf)
      EXPECT_NE(recs[i].region, recs[0].region);
    else
      EXPECT_EQ(recs[i].region, recs[0].region);
  }
  EXPECT_EQ(b.decoder.open_regions(), 0u);
}

// The short layouts' own limits: region ids above 16 bits and gaps of 2^20 ns or more do not
// fit the 2-unit child record, gaps of 2^13 ns or more the 1-unit one, gaps of 2^29 ns or more a
// Leave (a time record goes first); at the limits the records decode to the same values.
TEST(TraceRecords, ShortRecordLimits) {
  EXPECT_TRUE(fits_child(max_child_region, max_child_dt, 0));
  EXPECT_FALSE(fits_child(max_child_region + 1, 0, 0));
  EXPECT_FALSE(fits_child(0, max_child_dt + 1, 0));
  EXPECT_TRUE(fits_child(0, 0, 0 - child_delta_bias));
  EXPECT_FALSE(fits_child(0, 0, 0 - child_delta_bias - 1));
  EXPECT_TRUE(fits_child(0, 0, child_delta_bias - 1));
  EXPECT_FALSE(fits_child(0, 0, child_delta_bias));
  EXPECT_TRUE(fits_same(max_same_dt, 0));
  EXPECT_FALSE(fits_same(max_same_dt + 1, 0));
  EXPECT_TRUE(fits_same(0, 0 - same_delta_bias));
  EXPECT_FALSE(fits_same(0, 0 - same_delta_bias - 1));
  const std::uint64_t parent = 1ull << 50;
  std::vector<unit> u;
  auto put64 = [&](std::uint64_t v) {
    u.push_back(static_cast<unit>(v));
    u.push_back(static_cast<unit>(v >> 32));
  };
  put64(encode_head(code_time, 0, 0));
  put64(1000);
  put64(encode_head(code_enter, 7, 0));
  put64(parent);
  put64(0);
  put64(encode_child(max_child_region, max_child_dt, 0 - child_delta_bias));
  u.push_back(encode_short(code_leave, max_short_dt));
  put64(encode_child(3, 2, child_delta_bias - 1));
  u.push_back(encode_same(max_same_dt, 0 - same_delta_bias));
  u.push_back(encode_short(code_enter_bare, 5));
  std::vector<rec> recs;
  record_decoder d;
  d.decode(u.data(), u.data() + u.size(), [&](const rec& x) { recs.push_back(x); });
  ASSERT_EQ(recs.size(), 6u);
  EXPECT_EQ(recs[1].region, max_child_region);
  EXPECT_EQ(recs[1].ts, 1000 + max_child_dt);
  EXPECT_EQ(recs[1].parent, parent);
  EXPECT_EQ(recs[1].guid, parent - child_delta_bias);
  EXPECT_EQ(recs[2].kind, rec_leave);
  EXPECT_EQ(recs[2].region, max_child_region);
  EXPECT_EQ(recs[2].ts, 1000 + max_child_dt + max_short_dt);
  EXPECT_EQ(recs[3].region, 3u);
  EXPECT_EQ(recs[3].ts, recs[2].ts + 2);
  EXPECT_EQ(recs[3].guid, parent + child_delta_bias - 1);
  EXPECT_EQ(recs[4].region, 3u);
  EXPECT_EQ(recs[4].parent, recs[3].guid);
  EXPECT_EQ(recs[4].guid, recs[3].guid - same_delta_bias);
  EXPECT_EQ(recs[4].ts, recs[3].ts + max_same_dt);
  EXPECT_EQ(recs[5].region, idle_region);
  EXPECT_EQ(recs[5].guid, 0u);
  EXPECT_EQ(recs[5].ts, recs[4].ts + 5);
  EXPECT_EQ(d.open_regions(), 4u);
}

// Random nests of tasks (children of the innermost task, of an outer one, of another worker),
// idle periods between them, suspensions and resumptions with their inline parents, gaps of
// every size, several task kinds, through both the inline paths the hooks take
// (try_phase_begin / try_phase_end) and the general ones, over many chunks: every event comes
// back with its time, region, GUID and parent.
TEST(TraceRecords, RandomNestsDecodeExactly) {
  recording r;
  std::mt19937_64 rng(20261125);
  const std::vector<std::string> names{"fib", "leaf", "other", "sum"};
  struct open_task {
    grain::task_info t;
  };
  std::vector<open_task> open;
  std::vector<std::vector<open_task>> suspended;  // a suspended task with its inline parents
  std::vector<rec> want;
  std::uint64_t ts = 1'000'000'000, next_guid = (1ull << 40) | 1;
  std::uint64_t idle_enters = 0;
  bool idle = false;
  std::map<std::uint64_t, const char*> name_of;
  auto gap = [&]() -> std::uint64_t {
    const unsigned k = rng() % 100;
    if (k < 80) return rng() % 200;
    if (k < 97) return rng() % (1ull << 22);  // past the short records' fields now and then
    return (1ull << 37) + rng() % 1000;       // past the head word's: a time record
  };
  const auto& b = r.s.workers[0];
  for (int step = 0; step < 100'000; ++step) {
    ts += gap();
    const unsigned k = rng() % 100;
    if (idle) {
      if (k < 50) {
        idle_end(r.s, 0, ts);
        want.push_back({ts, 0, 0, idle_region, rec_leave});
        idle = false;
      }
      continue;
    }
    if (k < 5) {  // idle, with or without tasks open below
      idle_begin(r.s, 0, ts);
      want.push_back({ts, 0, 0, idle_region, rec_enter});
      ++idle_enters;
      idle = true;
      continue;
    }
    if (open.empty() && !suspended.empty() && k < 15) {  // a suspended task resumes here
      auto chain = std::move(suspended.back());
      suspended.pop_back();
      const grain::task_info& t = chain.back().t;
      if (rng() % 2 == 0 || !try_phase_begin(r.s, r.s.workers[0], t, ts))
        phase_begin(r.s, 0, t, ts);
      // The resumption, then each inline parent (a note naming the task, the parent's Enter),
      // then the task.
      want.push_back({ts, t.guid, 0, 0, rec_resume});
      for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
        want.push_back({ts, t.guid, 0, 0, rec_note});
        want.push_back({ts, chain[i].t.guid, chain[i].t.parent_guid, 0, rec_enter});
      }
      want.push_back({ts, t.guid, t.parent_guid, 0, rec_enter});
      open = std::move(chain);
      continue;
    }
    if (!open.empty() && k < 40) {
      const grain::task_info t = open.back().t;
      if (k < 3) {  // suspends, with its inline parents
        phase_end(r.s, 0, t, false, ts);
        for (std::size_t i = open.size(); i-- > 0;) want.push_back({ts, 0, 0, 0, rec_leave});
        suspended.push_back(open);
        open.clear();
        continue;
      }
      if (rng() % 2 == 0 || !try_phase_end(r.s.workers[0], t, true, ts))
        phase_end(r.s, 0, t, true, ts);
      want.push_back({ts, 0, 0, 0, rec_leave});
      open.pop_back();
      continue;
    }
    std::uint64_t parent = 0;
    const unsigned p = rng() % 100;
    if (!open.empty() && p < 80)
      parent = open.back().t.guid;  // a child
    else if (!open.empty() && p < 90)
      parent = open[rng() % open.size()].t.guid;  // an outer one's
    else
      parent = (static_cast<std::uint64_t>(rng() % 8) << 40) | (rng() % 1'000'000);
    std::uint64_t guid = next_guid++;
    if (rng() % 10 == 0)
      guid = (static_cast<std::uint64_t>(2 + rng() % 4) << 40) | (guid & 0xFFFFFF);
    const grain::task_info t{guid, parent, names[rng() % names.size()].c_str()};
    name_of[guid] = t.name;
    if (rng() % 2 == 0 || !try_phase_begin(r.s, r.s.workers[0], t, ts)) phase_begin(r.s, 0, t, ts);
    want.push_back({ts, guid, parent, 0, rec_enter});
    open.push_back({t});
  }
  EXPECT_GT(b.out.units_published, 2u * chunk_units) << "the records span several chunks";
  const auto recs = r.decoded();
  ASSERT_EQ(recs.size(), want.size());
  for (std::size_t i = 0; i < recs.size(); ++i) {
    if (recs[i].kind != want[i].kind || recs[i].ts != want[i].ts || recs[i].guid != want[i].guid ||
        recs[i].parent != want[i].parent)
      FAIL() << "record " << i << ": kind " << recs[i].kind << "/" << want[i].kind << " ts "
             << recs[i].ts << "/" << want[i].ts << " guid " << recs[i].guid << "/" << want[i].guid
             << " parent " << recs[i].parent << "/" << want[i].parent;
  }
  // Regions: one per task kind, and every Leave closes the region its Enter opened.
  std::map<const char*, std::uint32_t> region_of_name;
  std::set<std::uint32_t> task_regions;
  std::vector<std::uint32_t> open_regions;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const rec& x = recs[i];
    if (x.kind == rec_enter) {
      if (x.guid == 0) {
        ASSERT_EQ(x.region, idle_region) << i;
      } else {
        const char* name = name_of.at(x.guid);
        auto [it, fresh] = region_of_name.emplace(name, x.region);
        ASSERT_EQ(it->second, x.region) << "record " << i << ": " << name;
        if (fresh) {
          ASSERT_TRUE(task_regions.insert(x.region).second) << i;
        }
      }
      open_regions.push_back(x.region);
    } else if (x.kind == rec_leave) {
      ASSERT_FALSE(open_regions.empty()) << i;
      ASSERT_EQ(x.region, open_regions.back()) << "record " << i;
      open_regions.pop_back();
    }
  }
  EXPECT_EQ(region_of_name.size(), names.size());
  EXPECT_GT(idle_enters, 0u);
  // Six units per Enter would make it at least 3.5 per event; most Enters here are children.
  const double units_per_event =
      static_cast<double>(b.out.units_written()) / static_cast<double>(want.size());
  EXPECT_LT(units_per_event, 3.0);
}

}  // namespace
