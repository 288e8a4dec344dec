// Compact parcels (distributed/src/compact_parcel.hpp): the tag's encoding, the action table's
// numbering, and under mpirun that a lone small parcel travels as its payload alone, while a
// broken compact parcel is refused with an error the caller gets and the locality goes on
// serving.
#include "compact_parcel.hpp"

#include <gtest/gtest.h>

#include "actions.hpp"
#include "fault_fixture.hpp"
#include "testing.hpp"

namespace grain::test::dist {
namespace {

namespace c = grain::distributed::compact;
namespace t = grain::distributed::testing;
using grain::distributed::parcel_kind;

TEST(CompactTag, EachKindDecodesToWhatWasEncoded) {
  c::decoded d;
  ASSERT_TRUE(c::decode(c::post_tag(c::post_actions - 1), d));
  EXPECT_EQ(d.kind, parcel_kind::post);
  EXPECT_EQ(d.action_index, c::post_actions - 1);
  ASSERT_TRUE(c::decode(c::call_tag(c::call_actions - 1, 0xabcd), d));
  EXPECT_EQ(d.kind, parcel_kind::call);
  EXPECT_EQ(d.action_index, c::call_actions - 1);
  EXPECT_EQ(d.short_ref, 0xabcdu);
  ASSERT_TRUE(c::decode(c::result_tag(0xffff), d));
  EXPECT_EQ(d.kind, parcel_kind::result);
  EXPECT_EQ(d.short_ref, 0xffffu);
  EXPECT_FALSE(c::decode(c::tag_bit | 3 << 28, d)) << "no sender writes kind 3";
  for (const int tag : {c::post_tag(0), c::call_tag(0, 0), c::result_tag(0)}) {
    EXPECT_TRUE(c::is_compact(tag));
    EXPECT_GT(tag, 15) << "grain's other tags are below 16";
    EXPECT_LE(tag, c::max_tag);
  }
  EXPECT_FALSE(c::is_compact(1));
  EXPECT_FALSE(c::is_compact(15));
}

TEST(CompactTag, UsableOnlyWhereEveryRankHasTheSameActionsAndTagsAreWideEnough) {
  const std::uint64_t same[] = {7, 7, 7};
  const std::uint64_t other[] = {7, 7, 8};
  EXPECT_TRUE(c::usable(same, c::max_tag));
  EXPECT_FALSE(c::usable(other, c::max_tag)) << "a different program on one rank";
  EXPECT_FALSE(c::usable(same, 32767)) << "an MPI with the least tag range";
  EXPECT_FALSE(c::usable({}, c::max_tag));
}

TEST(WireIndices, ActionsAreNumberedInTheOrderOfTheirIds) {
  const std::uint64_t fingerprint = detail::freeze_wire_indices();
  EXPECT_EQ(detail::freeze_wire_indices(), fingerprint) << "once per process";
  const detail::action_info* previous = nullptr;
  std::uint32_t n = 0;
  for (; const detail::action_info* a = detail::find_action_by_wire_index(n); ++n) {
    EXPECT_EQ(a->wire_index, n);
    EXPECT_EQ(detail::find_action(a->id), a);
    if (previous) {
      EXPECT_LT(previous->id, a->id);
    }
    previous = a;
  }
  EXPECT_GT(n, 10u) << "the tests' actions are registered at start-up";
  EXPECT_EQ(action<&square>::info().wire_index < n, true);
  EXPECT_EQ(detail::find_action_by_wire_index(n), nullptr);
}

class CompactParcels : public FaultFixture {
 protected:
  void SetUp() override {
    FaultFixture::SetUp();
    if (IsSkipped()) return;
    if (!t::compact_parcels()) GTEST_SKIP() << "compact parcels are off (--grain:compact-parcels)";
  }
};

TEST_F(CompactParcels, SmallArgumentsTravelAlone) {
  std::uint64_t before = t::parcel_bytes_sent();
  EXPECT_EQ(grain::async(locality(dest), action<&square>{}, 9).get(), 81);
  EXPECT_EQ(t::parcel_bytes_sent() - before, sizeof(int)) << "a call of an int: 4 bytes";
  before = t::parcel_bytes_sent();
  const long bumped_before = grain::async(locality(dest), action<&bumped>{}).get();
  EXPECT_EQ(t::parcel_bytes_sent() - before, 0u) << "a call without arguments: no bytes";
  before = t::parcel_bytes_sent();
  grain::post(locality(dest), action<&bump>{}, 3);
  EXPECT_EQ(t::parcel_bytes_sent() - before, sizeof(int));
  // The post ran before a later call from this locality answers (one sender, in order).
  EXPECT_EQ(grain::async(locality(dest), action<&bumped>{}).get(), bumped_before + 3);
  // Past 64 bytes of arguments the full format's headers go with them.
  before = t::parcel_bytes_sent();
  const std::vector<char> big(100, 'x');
  EXPECT_EQ(grain::async(locality(dest), action<&echo>{}, big).get(), big);
  EXPECT_GT(t::parcel_bytes_sent() - before, big.size() + 32);
  // Exceptions still come back (an error travels in the full format).
  EXPECT_THROW(grain::async(locality(dest), action<&fail>{}, 3).get(), remote_exception);
}

TEST_F(CompactParcels, ManyCallsInFlightTakeBothFormats) {
  // Beyond the first 1024 slots of the call table a call has no short reference and goes in
  // the full format: both kinds of answers must find their calls.
  std::vector<future<int>> calls;
  for (int i = 0; i < 3000; ++i)
    calls.push_back(grain::async(locality(dest), action<&square>{}, i % 100));
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(calls[i].get(), (i % 100) * (i % 100)) << i;
}

TEST_F(CompactParcels, UnknownActionNumberIsRefusedAndNamed) {
  const std::string e = error_of(t::call_compact_tampered(
      dest, action<&square>::info(), int_args(2),
      [](int& tag, std::vector<char>&) { tag |= static_cast<int>((c::call_actions - 1) << 16); }));
  EXPECT_NE(e.find("no action numbered " + std::to_string(c::call_actions - 1)), std::string::npos)
      << e;
  EXPECT_NE(e.find("locality#" + std::to_string(dest) + " refused"), std::string::npos) << e;
  still_serves();
}

TEST_F(CompactParcels, ArgumentsThatDoNotDecodeAreRefused) {
  const std::string e = error_of(
      t::call_compact_tampered(dest, action<&square>::info(), int_args(2),
                               [](int&, std::vector<char>& payload) { payload.resize(3); }));
  EXPECT_NE(e.find("arguments do not decode: payload of 3 bytes, expected 4"), std::string::npos)
      << e;
  still_serves();
}

TEST_F(CompactParcels, OversizedCompactParcelIsRefused) {
  const std::string e = error_of(t::call_compact_tampered(
      dest, action<&square>::info(), int_args(2),
      [](int&, std::vector<char>& payload) { payload.resize(c::max_payload + 1); }));
  EXPECT_NE(e.find("a compact parcel of 65 bytes (at most 64)"), std::string::npos) << e;
  still_serves();
}

TEST_F(CompactParcels, TagsNoSenderWritesAreDropped) {
  t::send_raw(dest, c::tag_bit | 3 << 28, int_args(1));              // kind 3
  t::send_raw(dest, c::result_tag(1023), int_args(1));               // an answer nobody waits for
  t::send_raw(dest, c::post_tag(c::post_actions - 1), int_args(1));  // no such action
  still_serves();
}

}  // namespace
}  // namespace grain::test::dist
