// Every chunker covers every index exactly once, for empty, tiny, prime and large loops, from
// the main thread and from inside a task; chunker names parse and print.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "grain/async.hpp"
#include "grain/parallel/algorithms.hpp"
#include "runtime_fixture.hpp"

namespace ex = grain::execution;

namespace {

const char* const all_chunkers[] = {
    "static", "static:1",  "static:3", "static:1000", "dynamic",  "dynamic:7",  "dynamic:4096",
    "guided", "guided:13", "auto",     "auto:1us",    "adaptive", "adaptive:0", "adaptive:1000"};
const std::size_t sizes[] = {0, 1, 7, 97, 1009, 1'000'003};

// Runs for_loop over [0, n) and returns how many indices were not visited exactly once.
std::size_t miscovered(const ex::chunker& c, std::size_t n) {
  auto hits = std::make_unique<std::atomic<std::uint8_t>[]>(n + 1);
  grain::for_loop(ex::par.with(c), std::size_t{0}, n,
                  [&](std::size_t i) { hits[i].fetch_add(1, std::memory_order_relaxed); });
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += hits[i].load() != 1;
  return bad + hits[n].load();  // nothing past the end
}

class ParallelChunkers : public grain::test::RuntimeTest {};

}  // namespace

TEST_F(ParallelChunkers, EveryChunkerCoversEveryIndexOnceFromMain) {
  for (const char* name : all_chunkers) {
    const ex::chunker c = ex::parse_chunker(name);
    for (std::size_t n : sizes) EXPECT_EQ(miscovered(c, n), 0u) << name << " n=" << n;
  }
}

TEST_F(ParallelChunkers, EveryChunkerCoversEveryIndexOnceFromATask) {
  for (const char* name : all_chunkers) {
    const ex::chunker c = ex::parse_chunker(name);
    for (std::size_t n : sizes) {
      const std::size_t bad = grain::async([&] { return miscovered(c, n); }).get();
      EXPECT_EQ(bad, 0u) << name << " n=" << n;
    }
  }
}

TEST(ParallelChunkersPools, CoverageWithThreeWorkersAndOne) {
  for (const char* threads : {"--grain:threads=3", "--grain:threads=1"}) {
    auto rt = grain::test::start_runtime({threads});
    for (const char* name : all_chunkers)
      for (std::size_t n : {std::size_t{7}, std::size_t{1009}, std::size_t{100'003}})
        EXPECT_EQ(miscovered(ex::parse_chunker(name), n), 0u) << threads << " " << name << " " << n;
  }
}

TEST_F(ParallelChunkers, SignedAndOffsetRanges) {
  std::vector<std::atomic<int>> hits(2000);
  grain::for_loop(ex::par.with(ex::dynamic_chunk_size(5)), -1000, 1000,
                  [&](int i) { hits[static_cast<std::size_t>(i + 1000)].fetch_add(1); });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  int calls = 0;
  grain::for_loop(ex::par, 10, 3, [&](int) { ++calls; });  // last <= first: empty
  EXPECT_EQ(calls, 0);
}

TEST_F(ParallelChunkers, StaticSharesAreRoundRobinAndFixed) {
  // static:3 over 2 workers: runner 0 gets chunks 0, 2, 4, ... whichever worker runs it, so the
  // chunk count is exactly ceil(n / 3) and the recorded chunk size is 3.
  auto& st = grain::loop_statistics();
  const auto chunks0 = st.chunks.load();
  grain::for_loop(ex::par.with(ex::static_chunk_size(3)), 0, 100, [](int) {});
  EXPECT_EQ(st.chunks.load() - chunks0, 34u);
  EXPECT_EQ(st.last_chunk_size.load(), 3u);
  // static:0 splits evenly: one chunk per worker.
  const auto chunks1 = st.chunks.load();
  grain::for_loop(ex::par.with(ex::static_chunk_size()), 0, 101, [](int) {});
  EXPECT_EQ(st.chunks.load() - chunks1, 2u);
  EXPECT_EQ(st.last_chunk_size.load(), 51u);
}

TEST_F(ParallelChunkers, GuidedChunksShrinkToTheMinimum) {
  auto& st = grain::loop_statistics();
  const auto chunks0 = st.chunks.load();
  grain::for_loop(ex::par.with(ex::guided_chunk_size(10)), 0, 10'000, [](int) {});
  const auto chunks = st.chunks.load() - chunks0;
  EXPECT_EQ(st.last_chunk_size.load(), 5000u);  // first chunk: remaining / workers
  // Halving 10,000 down to chunks of 10 takes far fewer than 10,000 / 10 chunks.
  EXPECT_GT(chunks, 5u);
  EXPECT_LT(chunks, 1000u);
}

TEST(ParallelChunkerNames, ParseAndPrint) {
  EXPECT_EQ(ex::parse_chunker("static").name(), "static:0");
  EXPECT_EQ(ex::parse_chunker("static:64").name(), "static:64");
  EXPECT_EQ(ex::parse_chunker("dynamic").name(), "dynamic:1");
  EXPECT_EQ(ex::parse_chunker("guided:4").name(), "guided:4");
  EXPECT_EQ(ex::parse_chunker("auto").name(), "auto");
  EXPECT_EQ(ex::parse_chunker("auto:50us").target_ns, 50'000u);
  EXPECT_EQ(ex::parse_chunker("auto:2ms").name(), "auto:2ms");
  EXPECT_EQ(ex::parse_chunker("adaptive").name(), "adaptive");
  EXPECT_EQ(ex::parse_chunker("adaptive:2.5").lambda, 2.5);
  EXPECT_EQ(ex::parse_chunker("adaptive:2.5").name(), "adaptive:2.5");
  EXPECT_EQ(ex::chunker(ex::dynamic_chunk_size(9)).name(), "dynamic:9");
  for (const char* bad : {"", "fast", "static:", "static:x", "dynamic:0", "guided:0", "auto:5min",
                          "auto:-1us", "adaptive:-1", "static:12abc"}) {
    EXPECT_THROW(ex::parse_chunker(bad), std::invalid_argument) << bad;
  }
  try {
    ex::parse_chunker("fast");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("guided"), std::string::npos) << e.what();
  }
}

TEST(ParallelNoRuntime, ParallelLoopWithoutRuntimeIsAClearError) {
  EXPECT_THROW(grain::for_loop(ex::par, 0, 10, [](int) {}), std::logic_error);
  int n = 0;
  grain::for_loop(ex::seq, 0, 10, [&](int) { ++n; });  // seq needs no runtime
  EXPECT_EQ(n, 10);
}
