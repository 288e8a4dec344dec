// grain.settings and grain.optional: how a policy reads the settings a user gives it, and the
// errors for a misspelt name or a value of the wrong type (at load, without ending the
// program), on their own and through the shipped policies.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/lua_load.hpp"
#include "grain/grain.hpp"
#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace {

using grain::policy::engine;
using grain::policy::policy_error;

std::string load_error(engine& e, const std::string& code) {
  return grain::test::load_error(e, code, "snippet.lua");
}

// EXPECT that `text` contains every one of `parts`.
void expect_has(const std::string& text, const std::vector<std::string>& parts) {
  for (auto& p : parts) EXPECT_NE(text.find(p), std::string::npos) << "'" << p << "' in: " << text;
}

constexpr const char* defaults =
    "D = { pool = 'default', high = 0.5, low = 0.2, patience = 3, climb = true }\n";

TEST(Settings, DefaultsOnlyWhenNothingIsGiven) {
  engine e;
  EXPECT_EQ(load_error(e, std::string(defaults) +
                              "for _, given in ipairs({ false, {} }) do\n"
                              "  local c = grain.settings(D, given or nil)\n"
                              "  assert(c.pool == 'default' and c.high == 0.5 and c.low == 0.2)\n"
                              "  assert(c.patience == 3 and c.climb == true)\n"
                              "  assert(c ~= D)  -- a new table: the defaults stay as they are\n"
                              "  c.high = 9\n"
                              "  assert(D.high == 0.5)\n"
                              "end\n"),
            "");
}

TEST(Settings, GivenValuesReplaceTheirDefaultsOnly) {
  engine e;
  EXPECT_EQ(load_error(e, std::string(defaults) +
                              "local c = grain.settings(D, { high = 0.7, climb = false,\n"
                              "                              pool = 'io', patience = 5 })\n"
                              "assert(c.high == 0.7 and c.climb == false and c.pool == 'io')\n"
                              "assert(c.patience == 5 and c.low == 0.2)\n"),
            "");
}

TEST(Settings, UnknownNameIsAnErrorNamingItAndTheKnownOnes) {
  engine e;
  const std::string err =
      load_error(e, std::string(defaults) + "local c = grain.settings(D, { hgh = 0.6 })\n");
  expect_has(err, {"snippet.lua:2:", "unknown setting 'hgh'",
                   "(known: climb, high, low, patience, pool)"});
}

TEST(Settings, ValueOfAnotherTypeThanItsDefaultIsAnError) {
  engine e;
  expect_has(load_error(e, std::string(defaults) + "grain.settings(D, { high = '0.6' })\n"),
             {"snippet.lua:2:",
              "setting 'high' must be a number like its default 0.5, not a "
              "string (0.6)"});
  expect_has(load_error(e, std::string(defaults) + "grain.settings(D, { climb = 1 })\n"),
             {"setting 'climb' must be a boolean", "not a number (1)"});
  expect_has(load_error(e, std::string(defaults) + "grain.settings(D, { pool = 3 })\n"),
             {"setting 'pool' must be a string", "not a number (3)"});
  // false is a boolean, not "no value": a number setting does not take it.
  expect_has(load_error(e, std::string(defaults) + "grain.settings(D, { high = false })\n"),
             {"setting 'high' must be a number", "not a boolean (false)"});
  expect_has(load_error(e, std::string(defaults) + "grain.settings(D, 'high = 0.6')\n"),
             {"table of settings expected, got string"});
  expect_has(load_error(e, "grain.settings({ [1] = 2 }, nil)\n"),
             {"the defaults are named by strings, not by number"});
}

TEST(Settings, OptionalSettingsAreOffUnlessGivenAndTakeFalse) {
  engine e;
  const std::string d =
      "D = { gain = grain.optional('number'), trigger = grain.optional('string', 'iteration'),\n"
      "      knob = grain.optional('string|table') }\n";
  EXPECT_EQ(load_error(e, d + "local c = grain.settings(D)\n"
                              "assert(c.gain == nil and c.trigger == 'iteration' and c.knob == "
                              "nil)\n"
                              "c = grain.settings(D, { gain = 1.5, trigger = false, knob = {} })\n"
                              "assert(c.gain == 1.5 and c.trigger == false and type(c.knob) == "
                              "'table')\n"
                              "c = grain.settings(D, { knob = 'a.b' })\n"
                              "assert(c.knob == 'a.b')\n"
                              "assert(tostring(D.trigger) == 'grain.optional(\"string\", "
                              "iteration)')\n"),
            "");
  expect_has(load_error(e, d + "grain.settings(D, { gain = '1.5' })\n"),
             {"snippet.lua:3:", "setting 'gain' must be a number or false, not a string (1.5)"});
  expect_has(load_error(e, d + "grain.settings(D, { knob = 5 })\n"),
             {"setting 'knob' must be a string|table or false, not a number"});
  expect_has(load_error(e, "grain.optional('integer')"), {"'integer' is not a type"});
  expect_has(load_error(e, "grain.optional('number', 'x')"),
             {"the default is a string, not a number"});
}

// ---- the shipped policies ------------------------------------------------------------------

std::string write_policy(const std::string& name, const std::string& text) {
  auto d = std::filesystem::temp_directory_path() /
           ("grain_settings_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  std::string p = (d / name).string();
  std::ofstream(p) << text;
  return p;
}

const std::string throttle = GRAIN_SOURCE_DIR "/policies-lua/throttle.lua";

// The global table a policy loaded before hands to throttle.lua: a misspelt name refuses the
// policy with a message that names it, and the engine goes on (another policy loads and runs).
TEST(Settings, ThrottleRefusesAMisspeltGlobalSettingAndTheEngineGoesOn) {
  grain::knobs().define_int("pool.settings_a.workers", 1, 4, 4, "test pool");
  engine e;
  e.load_string("THROTTLE = { pool = 'settings_a', hgh = 0.6 }", "my_settings.lua");
  try {
    e.load_file(throttle);
    FAIL() << "expected policy_error";
  } catch (const policy_error& ex) {
    expect_has(ex.what(), {"throttle.lua:", "unknown setting 'hgh'",
                           "(known: high, low, min_workers, patience, period_ms, pool)"});
  }
  EXPECT_TRUE(e.rules().empty());
  e.load_string("THROTTLE = { pool = 'settings_a', high = 0.6 }", "my_settings.lua");
  e.load_file(throttle);
  ASSERT_EQ(e.rules().size(), 1u);
  EXPECT_EQ(e.rules()[0].name, "throttle:settings_a");
  e.run_periodic_now();
  EXPECT_EQ(e.rules()[0].errors, 0u) << e.rules()[0].last_error;
}

// The same through require(...).start{...}, for each policy that reads its settings.
TEST(Settings, EveryShippedPolicyRefusesAnUnknownSetting) {
  for (const char* name : {"throttle", "adaptive_inlining", "critical_pool", "adaptive_coalescing",
                           "tune_coalescing", "adaptive_grain", "tune_grain", "tune_knob"}) {
    engine e;
    expect_has(load_error(e, std::string("require('") + name + "').start{ no_such_setting = 1 }"),
               {std::string(name) + ".lua:", "unknown setting 'no_such_setting'", "(known: "});
  }
}

// adaptive_grain.lua's settings that can be switched off take false, and its numbers a number.
TEST(Settings, AdaptiveGrainTakesFalseForItsOptionalSettings) {
  grain::knobs().define_int("test.settings.nx", 10, 1000000, 1000, "nx");
  engine e;
  EXPECT_EQ(load_error(e,
                       "AG = require('adaptive_grain')\n"
                       "AG.start{ knob = 'test.settings.nx', coarse_jump = false, gain = 1.5,\n"
                       "          parts_field = false, instance = 'locality#0/total' }\n"),
            "");
  expect_has(load_error(e, "AG.start{ knob = 'test.settings.nx', lambda = '50' }"),
             {"adaptive_grain.lua:", "setting 'lambda' must be a number like its default 100"});
}

// At start-up the refusal is an option_error with the message (the command line then exits
// with status 2 after printing it): the library does not end the program itself.
TEST(Settings, MisspeltSettingStopsStartUpWithTheMessage) {
  const std::string cfg = write_policy("bad_throttle.lua", "THROTTLE = { high = '0.6' }\n");
  try {
    grain::runtime rt(std::vector<std::string>{"--grain:threads=2", "--grain:policy=" + cfg,
                                               "--grain:policy=" + throttle},
                      false);
    FAIL() << "expected option_error";
  } catch (const grain::option_error& ex) {
    expect_has(ex.what(), {"--grain:policy=", "throttle.lua:",
                           "setting 'high' must be a number like its default 0.5, not a string"});
  }
}

}  // namespace
