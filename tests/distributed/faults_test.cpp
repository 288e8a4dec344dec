// Bad parcels: an unknown action, another signature, a corrupted payload, arguments that do
// not decode, a truncated message, bytes that are not grain's. Each is refused with an error
// naming the action and the ranks — the caller's future gets it — and the receiving locality
// goes on serving. Needs two localities at least (skipped as one).
#include <gtest/gtest.h>

#include "actions.hpp"
#include "fault_fixture.hpp"
#include "testing.hpp"

namespace grain::test::dist {
namespace {

namespace t = grain::distributed::testing;

using Faults = FaultFixture;

TEST_F(Faults, UnknownActionIsRefusedAndNamed) {
  detail::action_info fake{"no_such_action", 0x1234abcd, 1, false, nullptr};
  const std::string e = error_of(t::call_tampered(dest, fake, int_args(1), {}));
  EXPECT_NE(e.find("no action with id " + std::to_string(0x1234abcd)), std::string::npos) << e;
  EXPECT_NE(e.find("locality#" + std::to_string(dest) + " refused"), std::string::npos) << e;
  still_serves();
}

TEST_F(Faults, OtherArgumentTypesAreRefused) {
  detail::action_info other = action<&square>::info();
  other.signature += 1;  // what a build with square(long) would send
  const std::string e = error_of(t::call_tampered(dest, other, int_args(3), {}));
  EXPECT_NE(e.find("'grain::test::dist::square'"), std::string::npos) << e;
  EXPECT_NE(e.find("types differ"), std::string::npos) << e;
  still_serves();
}

TEST_F(Faults, CorruptedPayloadIsRefused) {
  const std::string e = error_of(t::call_tampered(dest, action<&square>::info(), int_args(3),
                                                  [](std::vector<char>& m) { m.back() ^= 0x40; }));
  EXPECT_NE(e.find("checksum"), std::string::npos) << e;
  EXPECT_NE(e.find("square"), std::string::npos) << e;
  still_serves();
}

TEST_F(Faults, ArgumentsThatDoNotDecodeAreRefused) {
  // Three bytes for an int: a sound message whose payload is not square's arguments.
  const std::string e =
      error_of(t::call_tampered(dest, action<&square>::info(), std::vector<char>(3, 'x'), {}));
  EXPECT_NE(e.find("arguments do not decode: payload of 3 bytes, expected 4"), std::string::npos)
      << e;
  // A string whose length field is garbage (cereal path).
  std::vector<char> bad;
  serialize_values(bad, std::string("abc"));
  bad[0] = 0x7f;  // a length of 127 for 3 bytes
  const std::string e2 = error_of(t::call_tampered(dest, action<&shout>::info(), bad, {}));
  EXPECT_NE(e2.find("does not decode"), std::string::npos) << e2;
  still_serves();
}

TEST_F(Faults, TruncatedMessageIsRefused) {
  const std::string e =
      error_of(t::call_tampered(dest, action<&square>::info(), int_args(3),
                                [](std::vector<char>& m) { m.resize(m.size() - 2); }));
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  EXPECT_NE(e.find("dropped"), std::string::npos) << e;
  still_serves();
}

TEST_F(Faults, BytesThatAreNotGrainsAreDropped) {
  t::post_tampered(dest, action<&bump>::info(), int_args(1), [](std::vector<char>& m) {
    m.assign({'h', 'e', 'l', 'l', 'o'});
  });
  t::post_tampered(dest, action<&bump>::info(), int_args(1),
                   [](std::vector<char>& m) { m[0] ^= 1; });  // magic
  still_serves();
}

}  // namespace
}  // namespace grain::test::dist
