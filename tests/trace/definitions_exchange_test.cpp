// The definitions of a multi-rank archive: each rank's ids mapped onto one global set
// (instrumentation/src/trace/definitions_exchange.hpp), and the byte encoding between ranks.
// The archive itself is checked under mpirun (tests/distributed/run_checks trace).
#include "trace/definitions_exchange.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace {

using namespace grain::instrumentation::trace_detail;

local_definitions rank_defs(std::uint32_t rank, std::vector<std::string> strings,
                            std::vector<exchanged_region> regions,
                            std::vector<std::string> triggers) {
  local_definitions d;
  d.rank = rank;
  d.host = "node" + std::to_string(rank);
  d.workers = 2;
  d.start_ns = 100 + rank;
  d.end_ns = 1000 - rank;
  d.strings = std::move(strings);
  d.regions = std::move(regions);
  d.metrics = {{"/threads/idle-rate", "", "idle", 5}, {"knob:nx", "", "nx", 2}};
  if (rank == 1) std::swap(d.metrics[0], d.metrics[1]);
  d.triggers = std::move(triggers);
  d.events = {10, 20, 3, 4, 5};
  return d;
}

TEST(DefinitionsExchange, SameNamesOnDifferentRanksBecomeOneGlobalDefinition) {
  const std::vector<local_definitions> ranks = {
      rank_defs(0, {"", "rule", "coarsen"}, {{"Idle", 1}, {"task:f", 0}}, {"idle-rate"}),
      rank_defs(1, {"", "refine", "rule"}, {{"task:g", 0}, {"Idle", 1}, {"task:f", 0}},
                {"queue", "idle-rate"})};
  const unified_definitions u = unify(ranks, 11);
  // Rank 0's ids are the global ones.
  EXPECT_EQ(u.per_rank[0].strings, (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(u.per_rank[0].regions, (std::vector<std::uint64_t>{0, 1}));
  EXPECT_EQ(u.per_rank[0].metrics, (std::vector<std::uint64_t>{0, 1}));
  // Rank 1's map onto them; what is new gets the next ids.
  EXPECT_EQ(u.per_rank[1].strings, (std::vector<std::uint64_t>{0, 3, 1}));
  EXPECT_EQ(u.per_rank[1].regions, (std::vector<std::uint64_t>{2, 0, 1}));
  EXPECT_EQ(u.per_rank[1].metrics, (std::vector<std::uint64_t>{1, 0}));
  // Fixed attributes keep their ids; trigger attributes are unified by name after them.
  ASSERT_EQ(u.per_rank[1].attributes.size(), 13u);
  EXPECT_EQ(u.per_rank[1].attributes[11], 12u);  // "queue": new
  EXPECT_EQ(u.per_rank[1].attributes[12], 11u);  // "idle-rate": rank 0's
  EXPECT_EQ(u.strings, (std::vector<std::string>{"", "rule", "coarsen", "refine"}));
  ASSERT_EQ(u.regions.size(), 3u);
  EXPECT_EQ(u.regions[2], (exchanged_region{"task:g", 0}));
  EXPECT_EQ(u.triggers, (std::vector<std::string>{"idle-rate", "queue"}));
  EXPECT_EQ(u.start_ns, 100u);
  EXPECT_EQ(u.end_ns, 1000u);
}

TEST(DefinitionsExchange, RegionsWithTheSameNameButAnotherKindStayApart) {
  const std::vector<local_definitions> ranks = {rank_defs(0, {""}, {{"x", 0}}, {}),
                                                rank_defs(1, {""}, {{"x", 2}}, {})};
  const unified_definitions u = unify(ranks, 11);
  EXPECT_EQ(u.regions.size(), 2u);
  EXPECT_EQ(u.per_rank[1].regions, (std::vector<std::uint64_t>{1}));
}

TEST(DefinitionsExchange, EncodingsRoundTrip) {
  const local_definitions d = rank_defs(
      3, {"", "a string with spaces", std::string("nul\0inside", 10)}, {{"task:f", 0}}, {"t"});
  const std::vector<char> bytes = encode(d);
  const local_definitions back = decode_definitions(bytes.data(), bytes.size());
  EXPECT_EQ(back.rank, 3u);
  EXPECT_EQ(back.host, "node3");
  EXPECT_EQ(back.strings, d.strings);
  EXPECT_EQ(back.regions, d.regions);
  EXPECT_EQ(back.metrics, d.metrics);
  EXPECT_EQ(back.triggers, d.triggers);
  EXPECT_EQ(back.events, d.events);
  EXPECT_EQ(back.start_ns, d.start_ns);

  const id_mappings m{{0, 5, 2}, {1}, {}, {0, 1, 2}};
  const std::vector<char> mb = encode(m);
  EXPECT_EQ(decode_mappings(mb.data(), mb.size()), m);
}

TEST(DefinitionsExchange, TruncatedOrForeignBytesAreAnErrorNotACrash) {
  const std::vector<char> bytes = encode(rank_defs(1, {"", "x"}, {{"r", 0}}, {}));
  for (std::size_t n = 0; n < bytes.size(); n += 3)
    EXPECT_THROW(decode_definitions(bytes.data(), n), std::runtime_error) << n << " bytes";
  std::vector<char> longer = bytes;
  longer.push_back(0);
  EXPECT_THROW(decode_definitions(longer.data(), longer.size()), std::runtime_error);
  std::vector<char> foreign = bytes;
  foreign[0] ^= 1;
  EXPECT_THROW(decode_definitions(foreign.data(), foreign.size()), std::runtime_error);
  // A count far beyond what is left must not allocate it.
  std::vector<char> huge = encode(id_mappings{{1, 2}, {}, {}, {}});
  huge[0] = '\xff';
  huge[7] = '\x7f';
  EXPECT_THROW(decode_mappings(huge.data(), huge.size()), std::runtime_error);
}

}  // namespace
