// The compact records a worker writes on the task path (instrumentation/src/trace/record.hpp,
// recorder.hpp): what the recorder writes decodes back to the events it was given, across chunk
// boundaries and gaps longer than a head word's delta, with time never going back on a worker;
// and a task event takes 16 bytes of the worker's buffer (issue 13's target: at most 24).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "../../instrumentation/src/trace/recorder.hpp"

namespace {

using namespace grain::instrumentation::trace_detail;

// The recorder publishes full chunks through the back end's chunk_published(), nothing else.
class null_backend final : public backend {
 public:
  void open_workers(session_core&) override {}
  void sample(session_core&, const grain::instrumentation::counter_snapshot&) override {}
  void knob_value(session_core&, const std::string&, double, std::uint64_t) override {}
  void decision(session_core&, const grain::decision_record&, std::uint64_t) override {}
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
  // Every record of worker 0 so far, chunk by chunk in order (each decodes on its own).
  std::vector<rec> decoded() {
    worker_buf& b = s.workers[0];
    std::vector<rec> out;
    auto add = [&](const std::uint64_t* p, const std::uint64_t* e) {
      decode(p, e, [&](const rec& r) { out.push_back(r); });
    };
    for (chunk* c = b.out.take_published(); c;) {
      chunk* next = c->next;
      add(c->words, c->words + c->count);
      b.out.give_back(c);
      c = next;
    }
    if (b.out.current) add(b.out.current->words, b.out.cur);
    return out;
  }
};

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
  struct want {
    std::uint32_t kind;
    std::uint64_t ts, guid, parent;
    std::uint32_t region;
  };
  const want w[] = {
      {rec_enter, t0, 11, 0, ra},
      {rec_enter, t0 + 7, 12, 11, rb},
      {rec_enter, t0 + 7, 13, 12, ra},
      {rec_leave, t0 + long_gap, 0, 0, ra},
      {rec_leave, t0 + long_gap + 1, 0, 0, rb},
      {rec_leave, t0 + long_gap + 1, 0, 0, ra},
      {rec_enter, t0 + long_gap + 40, 0, 0, idle_region},
      {rec_leave, t0 + long_gap + 90, 0, 0, idle_region},
  };
  for (std::size_t i = 0; i < recs.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(recs[i].kind, w[i].kind);
    EXPECT_EQ(recs[i].ts, w[i].ts);
    EXPECT_EQ(recs[i].guid, w[i].guid);
    EXPECT_EQ(recs[i].parent, w[i].parent);
    EXPECT_EQ(recs[i].region, w[i].region);
  }
}

TEST(TraceRecords, ChunksDecodeOnTheirOwnAndATaskEventTakes16Bytes) {
  recording r;
  constexpr unsigned tasks = 40'000;  // 160,000 words: several 32,768-word chunks
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
  EXPECT_GT(b.out.words_published, 0u);
  const auto recs = r.decoded();
  ASSERT_EQ(recs.size(), want_ts.size());
  for (std::size_t i = 0; i < recs.size(); ++i) {
    if (recs[i].ts != want_ts[i])
      FAIL() << "record " << i << ": " << recs[i].ts << " != " << want_ts[i];
    if (i % 2 == 0 && recs[i].guid != ((1ull << 40) | (i / 2 + 1))) FAIL() << "record " << i;
  }
  // An Enter of three words and a Leave of one, plus a time record per chunk.
  const double per_event = static_cast<double>(b.out.words_written() * 8) / (2.0 * tasks);
  EXPECT_GE(per_event, 16.0);
  EXPECT_LT(per_event, 16.01);
  EXPECT_EQ(b.events, 2u * tasks);
}

}  // namespace
