// When the converter thread converts while the program runs (instrumentation/src/trace/
// convert_pacing.hpp): not while every worker is busy on a machine without a spare core, unless
// a worker's backlog reached its share of the buffer budget; always at stop.
#include "trace/convert_pacing.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace grain::instrumentation::trace_detail;

// `workers` busy workers on a machine without a spare core (a session is not movable).
void make_busy(session_core& s, std::size_t workers, std::uint32_t backlog_chunks) {
  s.workers = std::vector<worker_buf>(workers);
  s.spare_cores = false;
  s.backlog_chunks = backlog_chunks;
}

TEST(TraceConvertPacing, OnlyWithASpareCoreAnIdleWorkerOrALargeBacklog) {
  session_core s;
  make_busy(s, 2, 3);
  worker_buf& b = s.workers[0];
  EXPECT_FALSE(convert_now(s, b));  // both busy, nothing waiting
  b.out.unconverted = 2;
  EXPECT_FALSE(convert_now(s, b));
  s.workers[1].idle = true;  // the other worker's core has nothing to do
  EXPECT_TRUE(convert_now(s, b));
  s.workers[1].idle = false;
  b.out.unconverted = 3;  // the backlog reached the worker's share
  EXPECT_TRUE(convert_now(s, b));
  EXPECT_FALSE(convert_now(s, s.workers[1]));
  s.spare_cores = true;
  EXPECT_TRUE(convert_now(s, s.workers[1]));
  b.out.unconverted = 0;
}

TEST(TraceConvertPacing, BudgetIs256MiBInAllAndAtLeast16MiBPerWorker) {
  // The chunks a worker may hold, in bytes: the share, less than a chunk short of it.
  const auto share = [](std::size_t workers, double mib) {
    const double held = static_cast<double>(worker_backlog_chunks(workers)) * sizeof(chunk);
    EXPECT_LE(held, mib * (1 << 20)) << workers << " workers";
    EXPECT_GT(held, mib * (1 << 20) - sizeof(chunk)) << workers << " workers";
  };
  share(1, 256);
  share(2, 128);
  share(16, 16);
  share(64, 16);
}

TEST(TraceConvertPacing, HeldChunksAreConvertedInOrderAtStop) {
  session_core s;
  make_busy(s, 1, 100);
  worker_buf& b = s.workers[0];
  for (std::uint64_t i = 0; i < 4; ++i) {
    b.out.next_chunk();
    *b.out.cur++ = i;
  }
  b.out.next_chunk();  // publishes the fourth
  EXPECT_EQ(b.out.unconverted.load(), 4u);
  std::vector<std::uint64_t> seen;
  const auto convert = [&](unsigned, chunk* c) { seen.push_back(c->units[0]); };
  EXPECT_FALSE(drain_published(s, false, convert));  // busy, small backlog: held
  EXPECT_TRUE(seen.empty());
  EXPECT_TRUE(drain_published(s, true, convert));
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(b.out.unconverted.load(), 0u);
}

}  // namespace
