// The policy engine must never take the program down: rules that run too long in any way
// (inside one C call, in an xpcall message handler, in a finalizer), a state at its memory
// cap, sandbox escapes through the file system, policies that overwrite the API, a tuner on
// a metric that does not exist.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/lua_load.hpp"
#include "grain/clock.hpp"
#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace {

using namespace std::chrono_literals;
using grain::policy::engine;
using grain::policy::engine_options;
namespace inst = grain::instrumentation;

std::string tmp_dir() {
  auto d = std::filesystem::temp_directory_path() /
           ("grain_policy_robustness_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

inst::app_event event(std::string name, std::vector<std::pair<std::string, double>> payload = {}) {
  inst::app_event e;
  e.time_ns = grain::now_ns();
  e.name = std::move(name);
  e.payload = std::move(payload);
  return e;
}

inst::counter_snapshot snapshot(std::vector<std::pair<std::string, double>> values,
                                std::uint64_t seq) {
  inst::counter_snapshot s;
  s.time_ns = grain::now_ns();
  s.sequence = seq;
  s.layout_generation = 2000 + values.size();
  for (auto& [n, v] : values) s.values.push_back({n, v, true, inst::counter_kind::gauge});
  std::sort(s.values.begin(), s.values.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return s;
}

std::string load_error(engine& e, const std::string& code) {
  return grain::test::load_error(e, code, "robust.lua");
}

const grain::policy::rule_info* find_rule(const std::vector<grain::policy::rule_info>& rules,
                                          const std::string& name) {
  for (auto& r : rules)
    if (r.name == name) return &r;
  return nullptr;
}

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// ---- rules that run too long -------------------------------------------------------------

// The budget error is raised inside the count hook, where Lua runs an xpcall message handler
// with hooks off: a handler that loops escaped the budget.
TEST(TimeLimit, XpcallHandlerThatLoopsIsCut) {
  engine_options o;
  o.instruction_budget = 100000;
  engine e(o);
  e.load_string(
      "grain.on('go', function()\n"
      "  xpcall(function() while true do end end, function(m) while true do end end)\n"
      "end, 'loop-handler')\n"
      "grain.on('go', function()\n"
      "  xpcall(function() error('plain') end, function(m) while true do end end)\n"
      "end, 'loop-handler-plain-error')\n"
      "grain.on('go', function()\n"
      "  ok, msg = xpcall(function() error('fine') end, function(m) return 'handled: ' .. m end)\n"
      "end, 'good-handler')\n",
      "xpcall.lua");
  e.feed_event(event("go"));
  e.pump();
  auto rules = e.rules();
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].errors, 1u);
  EXPECT_TRUE(has(rules[0].last_error, "instruction budget")) << rules[0].last_error;
  EXPECT_EQ(rules[1].errors, 1u);
  EXPECT_TRUE(has(rules[1].last_error, "instruction budget")) << rules[1].last_error;
  EXPECT_EQ(rules[2].errors, 0u);
  EXPECT_EQ(load_error(e, "assert(ok == false and msg:find('handled: .*fine'))"), "");
}

// Finalizers run in the collector with hooks off (and lua_close runs them): none allowed.
TEST(TimeLimit, GcFinalizersAreRefused) {
  engine e;
  std::string err = load_error(e,
                               "setmetatable({}, {__gc = function() while true do end end})\n"
                               "collectgarbage('collect')");
  EXPECT_TRUE(has(err, "__gc")) << err;
  EXPECT_TRUE(has(err, "robust.lua:1")) << err;
  // Other metatables still work, and a __gc added later makes nothing finalizable.
  EXPECT_EQ(load_error(e,
                       "local mt = {__index = function(t, k) return k .. '!' end}\n"
                       "local t = setmetatable({}, mt)\n"
                       "assert(t.x == 'x!')\n"
                       "mt.__gc = function() while true do end end\n"
                       "t = nil; collectgarbage('collect')"),
            "");
}

TEST(TimeLimit, LuaCodePastTheDeadlineIsCutAndTheRuleDisabled) {
  engine_options o;
  o.instruction_budget = 1'000'000'000'000;
  o.time_limit = 50ms;
  engine e(o);
  e.load_string("grain.on('go', function() while true do end end, 'slow')\n", "slow.lua");
  e.feed_event(event("go"));
  e.pump();
  auto r = e.rules().at(0);
  EXPECT_TRUE(r.disabled);
  EXPECT_EQ(r.errors, 1u);
  EXPECT_TRUE(has(r.last_error, "time limit of 50 ms")) << r.last_error;
  EXPECT_TRUE(has(r.last_error, "slow.lua:1")) << r.last_error;
}

// string.find backtracking never returns to the VM, so no hook can cut it: pump (the engine's
// settle) and stop return anyway, the policy thread is left behind, the rule reported.
TEST(TimeLimit, RuleStuckInOneCCallIsAbandoned) {
  engine_options o;
  o.time_limit = 100ms;
  auto* e = new engine(o);  // leaked on purpose if the test fails: its thread may spin on
  e->load_string(
      "grain.on('go', function()\n"
      "  string.find(string.rep('a', 3000), '.-.-.-.-b')\n"
      "end, 'backtrack')\n"
      "grain.on('other', function() other = true end, 'other')\n",
      "backtrack.lua");
  e->start(1);
  const auto t0 = std::chrono::steady_clock::now();
  e->feed_event(event("go"));
  e->feed_event(event("other"));
  e->pump();  // returns although the rule never ends
  inst::add_listener(e);
  inst::settle_listeners();
  inst::remove_listener(e);  // no lock held by a settle that waits
  e->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);  // a hang detector, not a speed target
  EXPECT_FALSE(e->running());
  auto rules = e->rules();
  auto* r = find_rule(rules, "backtrack");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->disabled);
  EXPECT_TRUE(has(r->last_error, "time limit of 100 ms")) << r->last_error;
  delete e;  // keeps what the abandoned thread uses
}

// ---- memory cap --------------------------------------------------------------------------

// The event's payload table is made when the state is at its cap: an error of the rule, not
// a panic (abort) of the process.
TEST(MemoryCap, EventArgumentsAtTheCapAreAnErrorOfTheRule) {
  engine_options o;
  o.memory_limit = 2u << 20;
  engine e(o);
  e.load_string(
      "grain.on('big', function(p) got = true end, 'big-rule')\n"
      "hog = {}\n"
      "for i = 1, 50000 do hog[i] = false end\n"
      "local n = 0\n"
      "local function more() n = n + 1; hog[n] = {} end\n"
      "grain.on('fill', function() while pcall(more) do end end, 'fill')\n",
      "hog.lua");
  std::vector<std::pair<std::string, double>> payload;
  for (int i = 0; i < 16; ++i) payload.emplace_back("field" + std::to_string(i), i + 0.5);
  // Filled by a rule, so that no garbage is left to collect when the payload comes.
  e.feed_event(event("fill"));
  for (int i = 0; i < 3; ++i) e.feed_event(event("big", payload));
  e.pump();
  auto r = e.rules().at(0);
  EXPECT_TRUE(r.disabled);
  EXPECT_EQ(r.errors, 3u);
  EXPECT_TRUE(has(r.last_error, "not enough memory")) << r.last_error;
}

TEST(MemoryCap, TooSmallForTheLibrariesIsAnError) {
  engine_options o;
  o.memory_limit = 4096;
  EXPECT_THROW(engine e(o), std::runtime_error);
}

// ---- sandbox: files ----------------------------------------------------------------------

TEST(SandboxFiles, RequireDoesNotFollowASymlinkOutOfTheFolder) {
  const std::string dir = tmp_dir() + "/mods";
  std::filesystem::create_directories(dir);
  const std::string outside = tmp_dir() + "/outside_secret.lua";
  std::ofstream(outside) << "return 'secret'";
  std::ofstream(dir + "/inner.lua") << "return 'inner'";
  std::filesystem::remove(dir + "/link.lua");
  std::filesystem::remove(dir + "/alias.lua");
  std::filesystem::create_symlink(outside, dir + "/link.lua");
  std::filesystem::create_symlink(dir + "/inner.lua", dir + "/alias.lua");
  engine_options o;
  o.module_dirs = {dir};
  engine e(o);
  std::string err = load_error(e, "require('link')");
  EXPECT_TRUE(has(err, "outside the policy module directories")) << err;
  EXPECT_NE(load_error(e, "loadfile('" + dir + "/link.lua')"), "");
  // A link that stays inside is fine.
  EXPECT_EQ(load_error(e, "assert(require('alias') == 'inner')"), "");
}

TEST(SandboxFiles, NamesWithNulAreRefused) {
  const std::string dir = tmp_dir() + "/nul";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/name.lua") << "return 'name'";
  engine_options o;
  o.module_dirs = {dir};
  engine e(o);
  std::string err = load_error(e, "require('name\\0x')");
  EXPECT_TRUE(has(err, "NUL")) << err;
  EXPECT_TRUE(has(load_error(e, "dofile('" + dir + "/name.lua\\0x')"), "NUL"));
  EXPECT_TRUE(has(load_error(e, "loadfile('" + dir + "/name.lua\\0x')"), "NUL"));
  EXPECT_EQ(load_error(e, "assert(require('name') == 'name')"), "");
}

// ---- the API tables ----------------------------------------------------------------------

TEST(SandboxApi, PoliciesCannotReplaceTheApiOfOthers) {
  grain::knob& k = grain::knobs().define_int("test.robust.api", 0, 100, 0, "x");
  k.set(0, "reset");
  engine e;
  const char* attempts[] = {
      "grain.knob = function() error('hijacked') end",
      "grain = {}",
      "rawset(grain, 'knob', print)",
      "grain.log.info = nil",
      "rawset(grain.log, 'info', nil)",
      "getmetatable(grain.knob('test.robust.api')).__index.set = nil",
      "setmetatable(grain, nil)",
      "string.format = nil",
      "getmetatable('').__index = {}",
      "table.insert = nil",
      "math = nil",
      "pairs = nil",
  };
  for (const char* code : attempts) EXPECT_NE(load_error(e, code), "") << code;
  // Another policy's rule still works.
  e.load_string(
      "grain.on('go', function(p) grain.knob('test.robust.api'):set(p.v, 'go') end, 'other')\n",
      "other.lua");
  e.feed_event(event("go", {{"v", 7}}));
  e.pump();
  EXPECT_EQ(k.value(), 7);
  EXPECT_EQ(e.rules().at(0).errors, 0u);
  // Globals of the policies' own are shared as before; the API still enumerates.
  EXPECT_EQ(load_error(e, "mine = 1; function helper() return 2 end"), "");
  EXPECT_EQ(load_error(e, "assert(mine == 1 and helper() == 2); mine = 3; assert(mine == 3)"), "");
  EXPECT_EQ(load_error(e,
                       "local n = 0 for _ in pairs(grain) do n = n + 1 end assert(n >= 10)\n"
                       "assert(type(grain.log.info) == 'function' and ('x'):upper() == 'X')\n"
                       "assert(string.format('%d', 3) == '3' and _G.grain == grain)"),
            "");
}

// ---- grain.tune on a metric that does not come -------------------------------------------

TEST(TuneMetric, MissingCounterIsAnErrorAndTheKnobGoesBack) {
  grain::knob& k = grain::knobs().define_int("test.robust.tune_missing", 1, 2'000'000, 1000, "x");
  k.set(1000, "reset");
  engine e;
  e.load_string(
      "grain.tune{knobs = {'test.robust.tune_missing'}, metric = '/app/no-such-metric',\n"
      "           strategy = 'random', trigger = 'sample', window = 3, skip = 1,\n"
      "           name = 'tune-missing'}\n",
      "missing.lua");
  for (int i = 0; i < 20; ++i) {
    e.feed_sample(snapshot({{"/app/other", 1}}, i));
    e.pump();
  }
  EXPECT_EQ(k.value(), 1000);
  auto r = e.rules().at(0);
  EXPECT_TRUE(r.disabled);
  EXPECT_TRUE(has(r.last_error, "/app/no-such-metric")) << r.last_error;
}

TEST(TuneMetric, MissingPayloadFieldIsAnErrorAndTheKnobGoesBack) {
  grain::knob& k = grain::knobs().define_int("test.robust.tune_field", 1, 64, 5, "x");
  k.set(5, "reset");
  engine e;
  e.load_string(
      "grain.tune{knobs = {'test.robust.tune_field'}, metric = 'duration_nz', goal = 'min',\n"
      "           strategy = 'exhaustive', trigger = 'step', window = 1, skip = 0}\n",
      "field.lua");
  for (int i = 0; i < 10; ++i) {
    e.feed_event(event("step", {{"duration_ns", 100.0 + i}}));
    e.pump();
  }
  EXPECT_EQ(k.value(), 5);
  auto r = e.rules().at(0);
  EXPECT_TRUE(r.disabled);
  EXPECT_TRUE(has(r.last_error, "duration_nz")) << r.last_error;
}

// The request is parsed into C++ objects: a bad field is an error naming it and the line
// (raised after those objects are gone; ASan checks that nothing leaks).
TEST(TuneMetric, BadFieldsNameTheFieldAndTheLine) {
  grain::knobs().define_int("test.robust.tune_bad", 1, 64, 5, "x");
  engine e;
  std::string err = load_error(
      e, "grain.tune{knobs = {'test.robust.tune_bad'}, metric = '/m', window = 'three'}");
  EXPECT_TRUE(has(err, "robust.lua:1: grain.tune: 'window' must be a number")) << err;
  err = load_error(e,
                   "grain.tune{knobs = {{name = 'test.robust.tune_bad', min = 9, max = 2}},\n"
                   "           metric = '/m'}");
  EXPECT_TRUE(has(err, "min > max")) << err;
  err = load_error(e, "grain.tune{knobs = {'test.robust.tune_bad'}, metric = 'duration_ns'}");
  EXPECT_TRUE(has(err, "event field")) << err;
}

// A counter the application defines after the tuner was defined, within the first window.
TEST(TuneMetric, CounterThatAppearsInTheFirstWindowIsTuned) {
  grain::knob& k = grain::knobs().define_double("test.robust.tune_late", 0, 10, 9, "x");
  k.set(9, "reset");
  engine e;
  e.load_string(
      "grain.tune{knobs = {'test.robust.tune_late'}, metric = '/app/late', window = 3,\n"
      "           skip = 1, trigger = 'sample', name = 'late'}\n",
      "late.lua");
  e.feed_sample(snapshot({{"/app/other", 1}}, 0));
  e.pump();
  e.feed_sample(snapshot({{"/app/other", 1}}, 1));
  e.pump();
  for (int i = 2; i < 400; ++i) {
    const double x = k.value();
    e.feed_sample(snapshot({{"/app/late", (x - 3) * (x - 3) + 1}, {"/app/other", 1}}, i));
    e.pump();
  }
  EXPECT_NEAR(k.value(), 3, 0.3);
  EXPECT_EQ(e.rules().at(0).errors, 0u);
}

}  // namespace
