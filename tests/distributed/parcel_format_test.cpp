// The wire format (distributed/src/parcel.hpp): messages of parcels and coalesced batches
// encode and decode to what was put in, and broken ones are errors or marked corrupt, never a
// read past the end. No network: these run in every locality alike.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "grain/distributed/serialization.hpp"
#include "parcel.hpp"

namespace grain::distributed {
namespace {

struct batch_item {
  parcel_kind kind;
  std::uint64_t continuation;
  std::string payload;
};

std::vector<char> make_batch(const std::vector<batch_item>& items) {
  std::vector<char> msg;
  begin_batch(msg, 3, 0x1234'5678'9abc'def0ULL, 0x42);
  for (const auto& it : items) {
    const std::size_t at = open_batch_parcel(msg, it.kind, it.continuation);
    msg.insert(msg.end(), it.payload.begin(), it.payload.end());
    close_batch_parcel(msg, at);
  }
  seal_batch(msg, items.size());
  return msg;
}

const std::vector<batch_item> mixed = {{parcel_kind::post, 0, "abc"},
                                       {parcel_kind::call, 77, ""},
                                       {parcel_kind::call, 1ULL << 40, std::string(1000, 'x')},
                                       {parcel_kind::post, 0, "z"}};

TEST(ParcelFormat, BatchDecodesToItsParcelsInOrder) {
  const auto msg = make_batch(mixed);
  // 24 + 32 bytes of headers; a post's framing is 4 bytes, a call's 12.
  EXPECT_EQ(msg.size(), 56 + (4 + 3) + 12 + (12 + 1000) + (4 + 1));
  const auto parcels = decode_message(msg);
  ASSERT_EQ(parcels.size(), mixed.size());
  for (std::size_t i = 0; i < mixed.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(parcels[i].kind, mixed[i].kind);
    EXPECT_EQ(parcels[i].source, 3u);
    EXPECT_EQ(parcels[i].action, 0x1234'5678'9abc'def0ULL);
    EXPECT_EQ(parcels[i].signature, 0x42u);
    EXPECT_EQ(parcels[i].continuation, mixed[i].continuation);
    EXPECT_EQ(std::string(parcels[i].payload.begin(), parcels[i].payload.end()), mixed[i].payload);
    EXPECT_FALSE(parcels[i].corrupt);
  }
}

TEST(ParcelFormat, AFlippedByteMarksEveryParcelOfTheBatchCorrupt) {
  auto msg = make_batch(mixed);
  msg[msg.size() - 1] ^= 1;  // the last payload's byte
  const auto parcels = decode_message(msg);
  ASSERT_EQ(parcels.size(), mixed.size());
  for (const auto& p : parcels) EXPECT_TRUE(p.corrupt);
}

TEST(ParcelFormat, TruncatedOrOverlongBatchesAreErrors) {
  auto msg = make_batch(mixed);
  auto cut = msg;
  cut.pop_back();
  EXPECT_THROW(decode_message(cut), parcel_error);  // the header's size disagrees
  // A parcel that claims more bytes than are left, with the header's size made to match.
  auto lying = msg;
  const std::uint32_t huge = 1'000'000;
  std::memcpy(lying.data() + 56, &huge, 4);
  try {
    decode_message(lying);
    ADD_FAILURE() << "no error";
  } catch (const parcel_error& e) {
    EXPECT_NE(std::string(e.what()).find("payload bytes"), std::string::npos) << e.what();
  }
}

TEST(ParcelFormat, AGarbageParcelCountIsAnErrorNotAnAllocation) {
  auto msg = make_batch(mixed);
  const std::uint32_t count = 0xffff'ffff;
  std::memcpy(msg.data() + 8, &count, 4);  // message_header::parcels
  EXPECT_THROW(decode_message(msg), parcel_error);
}

TEST(ParcelFormat, UnknownFormatIsAnError) {
  auto msg = make_batch(mixed);
  const std::uint16_t format = 9;
  std::memcpy(msg.data() + 6, &format, 2);
  try {
    decode_message(msg);
    ADD_FAILURE() << "no error";
  } catch (const parcel_error& e) {
    EXPECT_NE(std::string(e.what()).find("format 9"), std::string::npos) << e.what();
  }
}

TEST(ParcelFormat, FirstParcelHeaderOfABrokenBatchNamesItsCall) {
  auto msg = make_batch({{parcel_kind::call, 99, "args"}, {parcel_kind::post, 0, "more"}});
  msg.resize(msg.size() - 3);  // broken: only the first parcel's framing is there
  parcel_view first;
  ASSERT_TRUE(first_parcel_header(msg, first));
  EXPECT_EQ(first.kind, parcel_kind::call);
  EXPECT_EQ(first.continuation, 99u);
  EXPECT_EQ(first.source, 3u);
  const auto posts = make_batch({{parcel_kind::post, 0, "a"}});
  ASSERT_TRUE(first_parcel_header(posts, first));
  EXPECT_EQ(first.kind, parcel_kind::post);
  EXPECT_FALSE(first_parcel_header(std::span<const char>(msg.data(), 20), first));
}

// The receiver's fast path reads a sound batch without a view per parcel: the same parcels
// as decode_message's, in order; anything else is not a batch to it, or the same error.
TEST(ParcelFormat, ReadBatchAndItsCursorGiveWhatDecodeGives) {
  const auto msg = make_batch(mixed);
  batch_view b;
  ASSERT_TRUE(read_batch(msg, b));
  EXPECT_EQ(b.source, 3u);
  EXPECT_EQ(b.action, 0x1234'5678'9abc'def0ULL);
  EXPECT_EQ(b.signature, 0x42u);
  EXPECT_EQ(b.parcels, mixed.size());
  EXPECT_FALSE(b.corrupt);
  batch_cursor c(std::span<const char>(msg).subspan(b.body_at));
  parcel_kind kind{};
  std::uint64_t continuation = 0;
  std::span<const char> payload;
  std::size_t i = 0;
  while (c.next(kind, continuation, payload)) {
    SCOPED_TRACE(i);
    ASSERT_LT(i, mixed.size());
    EXPECT_EQ(kind, mixed[i].kind);
    EXPECT_EQ(continuation, mixed[i].continuation);
    EXPECT_EQ(std::string(payload.begin(), payload.end()), mixed[i].payload);
    ++i;
  }
  EXPECT_EQ(i, mixed.size());

  auto flipped = msg;
  flipped.back() ^= 1;
  ASSERT_TRUE(read_batch(flipped, b));
  EXPECT_TRUE(b.corrupt);

  auto lying = msg;
  const std::uint32_t huge = 1'000'000;
  std::memcpy(lying.data() + 56, &huge, 4);
  EXPECT_THROW(read_batch(lying, b), parcel_error);
  auto cut = msg;
  cut.pop_back();
  EXPECT_THROW(read_batch(cut, b), parcel_error);

  std::vector<char> single;
  begin_message(single);
  append_parcel(single, parcel{});
  EXPECT_FALSE(read_batch(single, b));
  EXPECT_FALSE(read_batch(std::span<const char>(msg.data(), 10), b));
}

TEST(ParcelFormat, AMessageOfParcelsStillDecodes) {
  parcel p;
  p.kind = parcel_kind::result;
  p.source = 1;
  p.continuation = 5;
  p.payload = {'o', 'k'};
  std::vector<char> msg;
  begin_message(msg);
  append_parcel(msg, p);
  append_parcel(msg, p);
  const auto parcels = decode_message(msg);
  ASSERT_EQ(parcels.size(), 2u);
  EXPECT_EQ(parcels[1].kind, parcel_kind::result);
  EXPECT_EQ(parcels[1].continuation, 5u);
  EXPECT_EQ(std::string(parcels[1].payload.begin(), parcels[1].payload.end()), "ok");
  EXPECT_FALSE(parcels[1].corrupt);
}

}  // namespace
}  // namespace grain::distributed
