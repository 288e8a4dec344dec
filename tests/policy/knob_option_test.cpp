// --grain:knob=NAME=VALUE for a knob nobody can define any more is an error at start-up; an
// application's own knobs (APP.NAME) may still be set before the application defines them.
#include <gtest/gtest.h>

#include <string>

#include "grain/grain.hpp"
#include "grain/options.hpp"

namespace grain::test {
namespace {

std::string start_error(const std::string& knob) {
  try {
    grain::runtime rt({"--grain:threads=1", "--grain:knob=" + knob}, false);
  } catch (const grain::option_error& e) {
    return e.what();
  }
  return "";
}

TEST(KnobOption, UnknownKnobIsAnErrorAtStartup) {
  EXPECT_NE(start_error("unknown=1").find("no knob of that name"), std::string::npos);
  // A runtime namespace: its knobs are all defined before options are applied.
  const std::string e = start_error("pool.no-such-pool.workers=1");
  EXPECT_NE(e.find("no knob of that name"), std::string::npos) << e;
  EXPECT_NE(e.find("pool.default.workers"), std::string::npos) << "lists the known knobs: " << e;
}

TEST(KnobOption, ApplicationKnobMayComeLater) {
  grain::runtime rt({"--grain:threads=1", "--grain:knob=testapp.size=7"}, false);
  auto& k = grain::knobs().define_int("testapp.size", 1, 100, 3, "an application's knob");
  EXPECT_EQ(k.value(), 7);
}

}  // namespace
}  // namespace grain::test
