// The calls waiting for their answer (distributed/src/call_table.hpp): each answer finds its
// own call once; an answer to a call already answered, failed or never made finds nothing,
// also after its slot was reused; a dead rank's calls are taken out and no others.
#include "call_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace grain::distributed {
namespace {

pending_call call_to(std::uint32_t dest, std::uint64_t tag, int* answered = nullptr) {
  pending_call c;
  c.dest = dest;
  c.sent_ns = tag;
  if (answered) c.on_response = [answered](bool, std::span<const char>) { ++*answered; };
  return c;
}

TEST(CallTable, EachAnswerFindsItsOwnCallOnce) {
  call_table t;
  int answered = 0;
  const std::uint64_t a = t.add(call_to(1, 10, &answered));
  const std::uint64_t b = t.add(call_to(2, 20));
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.waiting(), 2u);
  pending_call c;
  ASSERT_TRUE(t.take(a, c));
  EXPECT_EQ(c.sent_ns, 10u);
  EXPECT_EQ(c.dest, 1u);
  c.on_response(true, {});  // the handler came out intact
  EXPECT_EQ(answered, 1);
  EXPECT_FALSE(t.take(a, c)) << "a second answer to the same call";
  EXPECT_EQ(t.waiting(), 1u);
  ASSERT_TRUE(t.take(b, c));
  EXPECT_EQ(c.sent_ns, 20u);
  EXPECT_EQ(t.waiting(), 0u);
}

TEST(CallTable, AnAnswerToAnOldCallDoesNotFindTheCallThatReusedItsSlot) {
  call_table t;
  const std::uint64_t old_call = t.add(call_to(1, 1));
  pending_call c;
  ASSERT_TRUE(t.take(old_call, c));
  const std::uint64_t new_call = t.add(call_to(1, 2));  // the same slot, a new generation
  EXPECT_EQ(new_call & 0xffffffffu, old_call & 0xffffffffu);
  EXPECT_NE(new_call, old_call);
  EXPECT_FALSE(t.take(old_call, c));
  ASSERT_TRUE(t.take(new_call, c));
  EXPECT_EQ(c.sent_ns, 2u);
}

TEST(CallTable, ContinuationsNeverMadeFindNothing) {
  call_table t;
  pending_call c;
  EXPECT_FALSE(t.take(0, c));
  EXPECT_FALSE(t.take(12345, c));
  const std::uint64_t a = t.add(call_to(1, 1));
  EXPECT_FALSE(t.take(a + 1, c));                         // another slot
  EXPECT_FALSE(t.take(a + (std::uint64_t{2} << 32), c));  // another generation
  EXPECT_FALSE(t.take(a & 0xffffffffu, c));               // generation 0: a free slot's
  EXPECT_TRUE(t.take(a, c));
}

TEST(CallTable, ADeadRanksCallsAreTakenOutAndNoOthers) {
  call_table t;
  std::vector<std::uint64_t> to_1, to_2;
  for (std::uint64_t i = 0; i < 50; ++i) {
    to_1.push_back(t.add(call_to(1, i)));
    to_2.push_back(t.add(call_to(2, 100 + i)));
  }
  const auto failed = t.take_all_to(1);
  EXPECT_EQ(failed.size(), 50u);
  for (const auto& c : failed) EXPECT_EQ(c.dest, 1u);
  EXPECT_EQ(t.waiting(), 50u);
  pending_call c;
  for (std::uint64_t k : to_1) EXPECT_FALSE(t.take(k, c));
  for (std::uint64_t k : to_2) EXPECT_TRUE(t.take(k, c));
  EXPECT_EQ(t.waiting(), 0u);
}

TEST(CallTable, ManyCallsAnsweredInAnyOrderEachOnce) {
  call_table t;
  std::mt19937_64 rng(7);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> open;  // continuation, tag
  std::set<std::uint64_t> answered;
  std::uint64_t next_tag = 0;
  for (int round = 0; round < 20000; ++round) {
    if (open.empty() || rng() % 3 != 0) {
      const std::uint64_t tag = next_tag++;
      open.emplace_back(t.add(call_to(static_cast<std::uint32_t>(tag % 4), tag)), tag);
    } else {
      std::swap(open[rng() % open.size()], open.back());
      const auto [k, tag] = open.back();
      open.pop_back();
      pending_call c;
      ASSERT_TRUE(t.take(k, c));
      EXPECT_EQ(c.sent_ns, tag);
      EXPECT_TRUE(answered.insert(tag).second);
      EXPECT_FALSE(t.take(k, c));
    }
  }
  EXPECT_EQ(t.waiting(), open.size());
}

TEST(CallTable, ShortReferencesFindTheirCallsOnce) {
  call_table t;
  std::vector<std::uint64_t> calls;
  for (std::uint64_t i = 0; i < 1100; ++i) calls.push_back(t.add(call_to(1, i)));
  std::uint32_t ref = 0;
  ASSERT_TRUE(call_table::short_ref(calls[5], ref));
  EXPECT_LT(ref, 1u << 16);
  EXPECT_FALSE(call_table::short_ref(calls[1024], ref)) << "past the first 1024 slots";
  ASSERT_TRUE(call_table::short_ref(calls[1023], ref));
  pending_call c;
  ASSERT_TRUE(t.take_short(ref, c));
  EXPECT_EQ(c.sent_ns, 1023u);
  EXPECT_FALSE(t.take_short(ref, c)) << "a second answer";
  EXPECT_FALSE(t.take(calls[1023], c)) << "the full continuation of the same call";
  EXPECT_FALSE(t.take_short(ref | 1u << 16, c)) << "bits above the reference";
  // The slot is reused: the old reference does not find the new call.
  const std::uint64_t again = t.add(call_to(2, 77));
  EXPECT_EQ(static_cast<std::uint32_t>(again), 1023u);
  EXPECT_FALSE(t.take_short(ref, c));
  std::uint32_t again_ref = 0;
  ASSERT_TRUE(call_table::short_ref(again, again_ref));
  EXPECT_NE(again_ref, ref);
  ASSERT_TRUE(t.take_short(again_ref, c));
  EXPECT_EQ(c.sent_ns, 77u);
  // A slot never used and a slot past the table find nothing.
  call_table small;
  EXPECT_FALSE(small.take_short(0, c));
  EXPECT_FALSE(small.take_short(1023, c));
}

TEST(CallTable, AfterABurstCallsTakeSlotsWithShortReferencesFirst) {
  call_table t;
  std::vector<std::uint64_t> calls;
  for (std::uint64_t i = 0; i < 3000; ++i) calls.push_back(t.add(call_to(1, i)));
  pending_call c;
  for (std::uint64_t k : calls) ASSERT_TRUE(t.take(k, c));  // the last answered are high slots
  std::uint32_t ref = 0;
  for (int i = 0; i < 1024; ++i) ASSERT_TRUE(call_table::short_ref(t.add(call_to(1, 0)), ref)) << i;
  EXPECT_FALSE(call_table::short_ref(t.add(call_to(1, 0)), ref)) << "the 1025th";
}

TEST(CallTable, ContinuationsNeverHaveTheCompactBit) {
  call_table t;
  pending_call c;
  // Many generations of one slot: the generation wraps below 2^31.
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t k = t.add(call_to(1, 1));
    ASSERT_EQ(k >> 63, 0u);
    ASSERT_TRUE(t.take(k, c));
  }
}

}  // namespace
}  // namespace grain::distributed
