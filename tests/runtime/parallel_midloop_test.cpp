// A chunk size that changes while the loop runs: the knob chunker reads its knob at every
// claim, and the adaptive chunker re-reads loop.lambda at every chunk, so a change made while
// a loop runs (here by the loop's own body, as a policy would from its thread) reaches the
// chunks not yet handed out, and every iteration still runs exactly once. Only mechanics are
// asserted (which sizes the chunks had, and where), never a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/spin.hpp"
#include "grain/detail/config.hpp"
#include "grain/knob.hpp"
#include "grain/parallel/algorithms.hpp"
#include "runtime_fixture.hpp"

namespace ex = grain::execution;

namespace {

// The chunks a loop ran, as (begin, end), and how often each index ran.
struct chunk_log {
  explicit chunk_log(std::size_t n) : hits(std::make_unique<std::atomic<std::uint8_t>[]>(n + 1)) {}
  std::unique_ptr<std::atomic<std::uint8_t>[]> hits;
  std::mutex m;
  std::vector<std::pair<std::size_t, std::size_t>> chunks;

  void ran(std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lk(m);
    chunks.emplace_back(b, e);
  }
  // Indices not run exactly once (and anything past the end).
  std::size_t miscovered(std::size_t n) const {
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) bad += hits[i].load() != 1;
    return bad + hits[n].load();
  }
  std::vector<std::pair<std::size_t, std::size_t>> sorted() {
    std::lock_guard lk(m);
    auto c = chunks;
    std::sort(c.begin(), c.end());
    return c;
  }
};

grain::knob& chunk_knob() {
  return grain::knobs().define_int("test.midloop.chunk", 1, 1 << 30, 4,
                                   "parallel_midloop_test: the chunk size");
}

// A knob loop over [0, n) whose chunk holding `change_at` sets the knob from 4 to 64. Each
// chunk spins 1 us, so that no runner can claim the rest of the loop while another stands
// between its claim and the change (that would take a preemption of ~50 ms).
void run_changing_loop(chunk_log& log, std::size_t n, std::size_t change_at) {
  grain::knob& k = chunk_knob();
  k.set(4, "test: start", "test");
  grain::for_chunks(ex::par.with(ex::knob_chunk_size(k)), std::size_t{0}, n,
                    [&](std::size_t b, std::size_t e) {
                      if (b <= change_at && change_at < e) k.set(64, "test: mid-loop", "test");
                      grain::test::spin_ns(1000);
                      log.ran(b, e);
                    });
}

class ParallelMidLoop : public grain::test::RuntimeTest {};

}  // namespace

// One worker: the claims come one after the other, so the sizes are exact: 4 up to and
// including the chunk that changed the knob, 64 after it (the last chunk holds the rest).
TEST(ParallelMidLoopOneWorker, KnobChangeResizesEveryLaterChunk) {
  auto rt = grain::test::start_runtime({"--grain:threads=1"});
  const std::size_t n = 10'001, change_at = 1'000;
  chunk_log log(n);
  run_changing_loop(log, n, change_at);
  EXPECT_EQ(log.miscovered(n), 0u);
  const auto chunks = log.sorted();
  ASSERT_FALSE(chunks.empty());
  for (const auto& [b, e] : chunks) {
    const std::size_t size = e - b, want = b <= change_at ? 4 : 64;
    if (e == n) {
      EXPECT_LE(size, want) << "the last chunk [" << b << ", " << e << ")";
    } else {
      EXPECT_EQ(size, want) << "chunk [" << b << ", " << e << ")";
    }
  }
  EXPECT_EQ(grain::loop_statistics().last_chunk_size.load(), 64u);
  EXPECT_EQ(grain::loop_statistics().last_kind.load(),
            static_cast<std::uint8_t>(ex::chunk_kind::knob));
}

// Two workers: chunks claimed before the change are 4 (every chunk that begins before the one
// that changed the knob); after the first chunk of 64, only a claim that read the knob just
// before the change may still be 4 — at most one per other runner.
TEST_F(ParallelMidLoop, KnobChangeResizesTheChunksNotYetHandedOut) {
  const std::size_t n = 200'003, change_at = 1'000;
  chunk_log log(n);
  run_changing_loop(log, n, change_at);
  EXPECT_EQ(log.miscovered(n), 0u);
  const auto chunks = log.sorted();
  std::size_t changed = chunks.size(), first_large = chunks.size(), stale = 0, large = 0;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto [b, e] = chunks[c];
    if (b <= change_at && change_at < e) changed = c;
    if (e - b == 64 && first_large == chunks.size()) first_large = c;
    if (e != n) {
      EXPECT_TRUE(e - b == 4 || e - b == 64) << "chunk [" << b << ", " << e << ")";
    }
    if (c > first_large && e - b == 4) ++stale;
    large += e - b == 64;
  }
  ASSERT_LT(changed, chunks.size());
  for (std::size_t c = 0; c <= changed; ++c)
    EXPECT_EQ(chunks[c].second - chunks[c].first, 4u) << "chunk " << c;
  EXPECT_LE(stale, 1u);
  // Most of the loop came after the change: nearly all of it in chunks of 64.
  EXPECT_GT(large * 64, (n - change_at) / 2);
}

// A name that parses and prints: knob:NAME (the knob must exist and be a number).
TEST_F(ParallelMidLoop, KnobChunkerParsesAndPrints) {
  chunk_knob();
  const ex::chunker c = ex::parse_chunker("knob:test.midloop.chunk");
  EXPECT_EQ(c.kind, ex::chunk_kind::knob);
  EXPECT_EQ(c.size_knob, &chunk_knob());
  EXPECT_EQ(c.name(), "knob:test.midloop.chunk");
  EXPECT_THROW(ex::parse_chunker("knob:no.such.knob"), std::invalid_argument);
  EXPECT_THROW(ex::parse_chunker("knob"), std::invalid_argument);
}

// The adaptive chunker with loop.lambda = 0 keeps every chunk at one iteration (its target is
// 0); set to 1000 while the loop runs, the runners size their next chunks from the new target
// (lambda x t_o is many 1-us iterations), so larger chunks follow in the same call.
TEST_F(ParallelMidLoop, AdaptiveFollowsALambdaChangeWithinTheCall) {
#if GRAIN_TSAN
  GTEST_SKIP() << "timings under ThreadSanitizer are not the program's";
#endif
  grain::knob& lambda = grain::knobs().at("loop.lambda");
  const double before = lambda.value();
  lambda.set(0, "test: one-iteration chunks", "test");
  const std::size_t n = 4'000, change_at = 100;
  chunk_log log(n);
  grain::for_chunks(ex::par, std::size_t{0}, n, [&](std::size_t b, std::size_t e) {
    if (b <= change_at && change_at < e) lambda.set(1000, "test: mid-loop", "test");
    grain::test::spin_ns(1000 * (e - b));
    log.ran(b, e);
  });
  lambda.set(before, "test: restore", "test");
  EXPECT_EQ(log.miscovered(n), 0u);
  std::size_t largest = 0;
  bool before_change_single = true;
  for (const auto& [b, e] : log.sorted()) {
    largest = std::max(largest, e - b);
    if (b <= change_at) before_change_single &= e - b == 1;
  }
  EXPECT_TRUE(before_change_single);
  EXPECT_GE(largest, 4u);
}
