// The policy engine driven directly (no runtime): sandbox, budget, memory cap, errors,
// triggers, counters, knobs and decision records, tuners, C++ policies.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/lua_load.hpp"
#include "grain/clock.hpp"
#include "grain/instrumentation/app.hpp"
#include "grain/knob.hpp"
#include "grain/policy/engine.hpp"

namespace {

using grain::policy::engine;
using grain::policy::engine_options;
using grain::policy::policy_error;
namespace inst = grain::instrumentation;

std::string tmp_dir() {
  auto d =
      std::filesystem::temp_directory_path() / ("grain_policy_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

std::string write_file(const std::string& name, const std::string& text) {
  std::string p = tmp_dir() + "/" + name;
  std::ofstream(p) << text;
  return p;
}

inst::counter_snapshot snapshot(std::vector<std::pair<std::string, double>> values,
                                std::uint64_t seq = 0) {
  inst::counter_snapshot s;
  s.time_ns = grain::now_ns();
  s.sequence = seq;
  s.layout_generation = 1000 + values.size();
  for (auto& [n, v] : values) s.values.push_back({n, v, true, inst::counter_kind::gauge});
  std::sort(s.values.begin(), s.values.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return s;
}

inst::app_event event(std::string name, std::vector<std::pair<std::string, double>> payload) {
  inst::app_event e;
  e.time_ns = grain::now_ns();
  e.name = std::move(name);
  e.payload = std::move(payload);
  return e;
}

std::string load_error(engine& e, const std::string& code) {
  return grain::test::load_error(e, code, "snippet.lua");
}

// ---- sandbox -----------------------------------------------------------------------------

TEST(Sandbox, LibrariesThatReachOutsideAreAbsent) {
  engine e;
  EXPECT_EQ(load_error(e, "assert(os == nil and io == nil and debug == nil and package == nil)"),
            "");
  EXPECT_EQ(load_error(e, "assert(string.dump == nil)"), "");
  EXPECT_EQ(load_error(e, "assert(math.sin(0) == 0 and table.concat({1,2}, ',') == '1,2')"), "");
}

TEST(Sandbox, EachForbiddenCallIsBlocked) {
  engine e;
  const char* forbidden[] = {
      "os.execute('true')",
      "os.exit(0)",
      "io.open('/etc/passwd')",
      "io.write('x')",
      "debug.sethook()",
      "package.loadlib('libc.so.6', 'system')",
      "require('os')",
      "require('io')",
      "require('debug')",
      "require('../../../etc/passwd')",
      "dofile('/etc/passwd')",
      "loadfile('/etc/hostname')",
      "local f = assert(load('\\27Lua\\x54\\0'))",  // bytecode: refused in text mode
      "assert(load('return 1', 'x', 'b'))",
      "collectgarbage('stop')",
      "string.dump(function() end)",
  };
  for (const char* code : forbidden)
    EXPECT_NE(load_error(e, code), "") << code << " was not blocked";
  // load of text still works, with or without an environment.
  EXPECT_EQ(load_error(e, "assert(load('return 1 + 1')() == 2)"), "");
  EXPECT_EQ(load_error(e, "assert(load('return x', 't', 't', {x = 5})() == 5)"), "");
}

TEST(Sandbox, RequireReadsTheModuleDirectoriesOnly) {
  const std::string dir = tmp_dir() + "/mods";
  std::filesystem::create_directories(dir + "/sub");
  std::ofstream(dir + "/helper.lua") << "return { twice = function(x) return 2 * x end }";
  std::ofstream(dir + "/sub/inner.lua") << "return 7";
  engine_options o;
  o.module_dirs = {dir};
  engine e(o);
  EXPECT_EQ(load_error(e, "local h = require('helper'); assert(h.twice(4) == 8)"), "");
  EXPECT_EQ(load_error(e, "assert(require('helper') == require('helper'))"), "");
  EXPECT_EQ(load_error(e, "assert(require('sub.inner') == 7)"), "");
  EXPECT_EQ(load_error(e, "assert(dofile('" + dir + "/sub/inner.lua') == 7)"), "");
  EXPECT_NE(load_error(e, "require('missing')").find("not found"), std::string::npos);
  EXPECT_NE(load_error(e, "dofile('" + dir + "/../engine_outside.lua')"), "");
}

TEST(Sandbox, ShippedPoliciesAreRequirable) {
  engine e;  // default module directories: policies-lua/ of the source tree
  EXPECT_EQ(load_error(e, "local t = require('tune_knob'); assert(type(t) == 'table')"), "");
}

TEST(Sandbox, EndlessLoopIsCut) {
  engine_options o;
  o.instruction_budget = 100000;
  engine e(o);
  auto t0 = std::chrono::steady_clock::now();
  std::string err = load_error(e, "while true do end");
  EXPECT_NE(err.find("instruction budget"), std::string::npos) << err;
  EXPECT_NE(err.find("snippet.lua:1"), std::string::npos) << err;
  // In a rule, even behind pcall.
  e.load_string(
      "grain.every(1, function() while true do end end, 'spin')\n"
      "grain.every(1, function() while true do pcall(function() while true do end end) end end, "
      "'spin-pcall')\n"
      "ok = 0\n"
      "grain.every(1, function() ok = ok + 1 end, 'fine')",
      "loops.lua");
  e.run_periodic_now();
  e.run_periodic_now();
  auto rules = e.rules();
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].errors, 2u);
  EXPECT_EQ(rules[1].errors, 2u);
  EXPECT_NE(rules[1].last_error.find("instruction budget"), std::string::npos);
  EXPECT_EQ(rules[2].errors, 0u);
  EXPECT_EQ(rules[2].calls, 2u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(Sandbox, MemoryCap) {
  engine_options o;
  o.memory_limit = 4u << 20;
  engine e(o);
  std::string err = load_error(e, "local t = {} for i = 1, 1e8 do t[i] = ('x'):rep(100) .. i end");
  EXPECT_NE(err.find("not enough memory"), std::string::npos) << err;
  EXPECT_LE(e.lua_memory(), 4u << 20);
  // The state still works after the failure.
  EXPECT_EQ(load_error(e, "collectgarbage('collect'); x = {1, 2, 3}; assert(#x == 3)"), "");
}

// ---- errors ------------------------------------------------------------------------------

TEST(Errors, SyntaxErrorNamesFileAndLine) {
  std::string path =
      write_file("syntax.lua", "-- a policy\ngrain.every(10, function()\n  x = = 1\nend)\n");
  engine e;
  try {
    e.load_file(path);
    FAIL() << "expected policy_error";
  } catch (const policy_error& ex) {
    std::string w = ex.what();
    EXPECT_NE(w.find("syntax.lua:3:"), std::string::npos) << w;
  }
}

TEST(Errors, RuleDisabledAfterThreeConsecutiveErrors) {
  engine e;
  e.load_string(
      "n = 0\n"
      "grain.every(1, function()\n"
      "  n = n + 1\n"
      "  if n ~= 3 then error('boom ' .. n) end\n"  // fails 1, 2, succeeds 3, fails 4, 5, 6
      "end, 'flaky')\n",
      "flaky.lua");
  for (int i = 0; i < 10; ++i) e.run_periodic_now();
  auto r = e.rules().at(0);
  EXPECT_TRUE(r.disabled);
  EXPECT_EQ(r.calls, 6u);
  EXPECT_EQ(r.errors, 5u);
  EXPECT_NE(r.last_error.find("flaky.lua:4: boom 6"), std::string::npos) << r.last_error;
}

TEST(Errors, UnknownKnobNamesTheKnownOnes) {
  grain::knobs().define_int("test.engine.known", 0, 1, 0, "x");
  engine e;
  std::string err = load_error(e, "grain.knob('nope')");
  EXPECT_NE(err.find("snippet.lua:1"), std::string::npos) << err;
  EXPECT_NE(err.find("nope"), std::string::npos) << err;
  EXPECT_NE(err.find("test.engine.known"), std::string::npos) << err;
}

// ---- knobs and decisions -----------------------------------------------------------------

TEST(Knobs, ClampIsRecordedWithRuleAndTrigger) {
  grain::knob& k = grain::knobs().define_int("test.engine.clamp", 1, 8, 4, "x");
  engine e;
  e.load_string(
      "grain.on('pressure', function(ev)\n"
      "  local q = grain.counter('/threads/queue-length')\n"
      "  local v, clamped = grain.knob('test.engine.clamp'):set(q * 10, 'queue is long')\n"
      "  result = {v, clamped}\n"
      "end, 'grow')\n",
      "clamp.lua");
  e.feed_sample(snapshot({{"/threads{locality#0/total}/queue-length", 3}}));
  e.feed_event(event("pressure", {}));
  e.pump();
  EXPECT_EQ(k.value(), 8);
  auto d = grain::knobs().decisions().back();
  EXPECT_EQ(d.knob, "test.engine.clamp");
  EXPECT_EQ(d.rule, "grow");
  EXPECT_TRUE(d.clamped);
  EXPECT_EQ(d.requested, 30);
  EXPECT_EQ(d.old_value, 4);
  EXPECT_EQ(d.new_value, 8);
  EXPECT_EQ(d.reason, "queue is long");
  ASSERT_EQ(d.trigger.size(), 1u);
  EXPECT_EQ(d.trigger[0].first, "/threads{locality#0/total}/queue-length");
  EXPECT_EQ(d.trigger[0].second, 3);
  EXPECT_EQ(load_error(e, "assert(result[1] == 8 and result[2] == true)"), "");
  // Setting the same value again is no decision.
  const auto n = grain::knobs().decisions().size();
  EXPECT_EQ(load_error(e, "grain.knob('test.engine.clamp'):set(8)"), "");
  EXPECT_EQ(grain::knobs().decisions().size(), n);
}

TEST(Knobs, GetInfoAndEnums) {
  grain::knobs().define_enum("test.engine.enum", {"static", "dynamic", "guided"}, "static",
                             "chunker");
  grain::knobs().define_double("test.engine.double", 0, 2, 0.5, "lambda");
  engine e;
  EXPECT_EQ(
      load_error(
          e,
          "local k = grain.knob('test.engine.enum')\n"
          "assert(k:get() == 'static')\n"
          "k:set('guided', 'try')\n"
          "assert(k:get() == 'guided' and k:value() == 2)\n"
          "local i = k:info()\n"
          "assert(i.type == 'enum' and i.values[2] == 'dynamic' and i.name == k:name())\n"
          "local d = grain.knob('test.engine.double')\n"
          "assert(d:get() == 0.5 and d:info().max == 2 and d:info().type == 'double')\n"
          "local found = false\n"
          "for _, n in ipairs(grain.knobs()) do found = found or n == 'test.engine.double' end\n"
          "assert(found)\n"),
      "");
  EXPECT_NE(load_error(e, "grain.knob('test.engine.enum'):set('sideways')"), "");
}

// ---- triggers and counters ---------------------------------------------------------------

TEST(Triggers, CountersWhenAndEvents) {
  grain::knobs().define_int("test.engine.when", 0, 100, 0, "x");
  engine e;
  e.load_string(
      "seen = {}\n"
      "grain.when('/threads/idle-rate', '>', 0.5, function(v, name)\n"
      "  grain.knob('test.engine.when'):set(math.floor(v * 100), 'idle')\n"
      "end)\n"
      "grain.on('sample', function(s) seen.samples = (seen.samples or 0) + 1; seen.seq = "
      "s.sequence end)\n"
      "grain.on('iteration', function(p, name) seen.step = p.step; seen.name = name end)\n"
      "grain.every(1, function()\n"
      "  local v, ok = grain.counter('/threads/idle-rate')\n"
      "  local m, ok2 = grain.counter('/papi{worker#0}/PAPI_TOT_INS')\n"
      "  local u, ok3 = grain.counter('/no/such')\n"
      "  seen.read = v; seen.ok = ok; seen.papi = (m == nil and ok2 == false); seen.none = (u == "
      "nil and not ok3)\n"
      "  local all = grain.counters('/threads{locality#0/worker#*}/idle-rate')\n"
      "  local n = 0 for _ in pairs(all) do n = n + 1 end\n"
      "  seen.workers = n\n"
      "end)\n",
      "triggers.lua");
  auto s = snapshot({{"/threads{locality#0/total}/idle-rate", 0.3},
                     {"/threads{locality#0/worker#0}/idle-rate", 0.2},
                     {"/threads{locality#0/worker#1}/idle-rate", 0.4},
                     {"/papi{worker#0}/PAPI_TOT_INS", 0}},
                    5);
  s.values[0].available = false;  // papi sorts first
  e.feed_sample(s);
  e.pump();
  EXPECT_EQ(grain::knobs().at("test.engine.when").value(), 0);  // 0.3: no
  s.values[1].value = 0.75;  // total idle-rate (papi sorts first)
  s.sequence = 6;
  e.feed_sample(s);
  e.feed_event(event("iteration", {{"step", 12}}));
  e.pump();
  e.run_periodic_now();
  EXPECT_EQ(grain::knobs().at("test.engine.when").value(), 75);
  EXPECT_EQ(load_error(e,
                       "assert(seen.samples == 2 and seen.seq == 6)\n"
                       "assert(seen.step == 12 and seen.name == 'iteration')\n"
                       "assert(seen.read == 0.75 and seen.ok == true and seen.papi and seen.none)\n"
                       "assert(seen.workers == 2)\n"),
            "");
}

// Each operator of grain.when compares as written (at, below and above the threshold), is
// shown as written in the rule's trigger ("!=" as "~="), and an unknown one is an error.
TEST(Triggers, WhenOperatorsCompareAsWritten) {
  engine e;
  e.load_string(
      "calls = {}\n"
      "for _, op in ipairs({'<', '<=', '>', '>=', '==', '~=', '!='}) do\n"
      "  grain.when('/x', op, 0.5, function() calls[op] = (calls[op] or 0) + 1 end, op)\n"
      "end\n",
      "ops.lua");
  for (double v : {0.4, 0.5, 0.6}) {
    e.feed_sample(snapshot({{"/x", v}}));
    e.pump();
  }
  const std::vector<std::pair<std::string, int>> want = {{"<", 1},  {"<=", 2}, {">", 1}, {">=", 2},
                                                         {"==", 1}, {"~=", 2}, {"!=", 2}};
  for (auto& [op, n] : want)
    EXPECT_EQ(load_error(e, "assert((calls['" + op + "'] or 0) == " + std::to_string(n) +
                                ", calls['" + op + "'])"),
              "")
        << op;
  std::vector<std::string> triggers;
  for (auto& r : e.rules()) triggers.push_back(r.trigger);
  EXPECT_EQ(triggers, (std::vector<std::string>{"when /x < 0.5", "when /x <= 0.5", "when /x > 0.5",
                                                "when /x >= 0.5", "when /x == 0.5",
                                                "when /x ~= 0.5", "when /x ~= 0.5"}));
  EXPECT_NE(load_error(e, "grain.when('/x', '=>', 1, function() end)")
                .find("operator '=>' is not one of"),
            std::string::npos);
}

TEST(Triggers, ThreadedEngineLifecycle) {
  grain::knobs().define_int("test.engine.life", 0, 1000, 0, "x");
  engine e;
  e.load_string(
      "ticks = 0\n"
      "grain.on('start', function(p) grain.knob('test.engine.life'):set(p.workers, 'start') end)\n"
      "grain.every(5, function() ticks = ticks + 1 end)\n"
      "grain.on('go', function() grain.knob('test.engine.life'):set(100 + ticks, 'go') end)\n",
      "life.lua");
  e.start(3);
  e.pump();
  EXPECT_EQ(grain::knobs().at("test.engine.life").value(), 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  e.feed_event(event("go", {}));
  e.pump();
  EXPECT_GT(grain::knobs().at("test.engine.life").value(), 103);  // every(5) ran several times
  e.stop();
  EXPECT_GT(e.thread_cpu_ns(), 0u);
}

TEST(Triggers, SettleListenersWaitsForTheRuleThatAnswersAnEvent) {
  // The rule takes milliseconds before it sets the knob: without settle_listeners the knob
  // would still hold its old value right after grain::event returned.
  grain::knobs().define_int("test.engine.settle", 0, 1000, 0, "x");
  engine_options o;
  o.instruction_budget = 1'000'000'000;
  engine e(o);
  e.load_string(
      "grain.on('slow', function(p)\n"
      "  local t = grain.time(); while grain.time() - t < 0.02 do end\n"
      "  grain.knob('test.engine.settle'):set(p.value, 'answer')\n"
      "end)\n",
      "settle.lua");
  e.start(1);
  inst::add_listener(&e);
  for (int v = 1; v <= 3; ++v) {
    grain::event("slow", {{"value", v}});
    grain::settle_listeners();
    EXPECT_EQ(grain::knobs().at("test.engine.settle").value(), v);
  }
  inst::remove_listener(&e);
  e.stop();
  grain::settle_listeners();  // no listener left: returns at once
}

// ---- tuners ------------------------------------------------------------------------------

TEST(Tune, LuaTunerOnSamplesConverges) {
  grain::knob& k = grain::knobs().define_double("test.engine.tune", 0, 10, 9, "x");
  engine e;
  e.load_string(
      "grain.tune{knobs = {'test.engine.tune'}, metric = '/app/time', goal = 'min',\n"
      "           strategy = 'nelder_mead', trigger = 'sample', window = 3, skip = 1,\n"
      "           on_done = function(best, metric, converged) done = {best, metric, converged} "
      "end}\n"
      "grain.on('tuned', function(p) tuned = p end)\n",
      "tune.lua");
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 0.01);
  for (int i = 0; i < 400; ++i) {
    const double x = k.value();
    e.feed_sample(snapshot({{"/app/time", (x - 3.3) * (x - 3.3) + 1 + noise(rng)}}, i));
    e.pump();
  }
  EXPECT_NEAR(k.value(), 3.3, 0.3);
  EXPECT_EQ(load_error(e,
                       "assert(done and tuned and math.abs(tuned['test.engine.tune'] - "
                       "done[1]['test.engine.tune']) < 1e-9)\n"
                       "assert(tuned.evaluations > 3 and tuned.evaluations <= 30)\n"),
            "");
  auto d = grain::knobs().decisions().back();
  EXPECT_EQ(d.knob, "test.engine.tune");
  EXPECT_NE(d.reason.find("best /app/time"), std::string::npos) << d.reason;
  EXPECT_EQ(d.rule.rfind("tune@tune.lua", 0), 0u) << d.rule;
}

TEST(Tune, EventTriggeredTunerMaximisesPayload) {
  grain::knob& k = grain::knobs().define_int("test.engine.chunk", 1, 64, 1, "chunk");
  engine e;
  e.load_string(
      "grain.tune{knobs = {'test.engine.chunk'}, metric = 'throughput', goal = 'max',\n"
      "           strategy = 'exhaustive', trigger = 'iteration', window = 1, skip = 0,\n"
      "           name = 'chunk-sweep'}\n",
      "sweep.lua");
  for (int i = 0; i < 200; ++i) {
    const double c = k.value();
    e.feed_event(event("iteration", {{"throughput", 1000 - (c - 20) * (c - 20)}}));
    e.pump();
  }
  EXPECT_EQ(k.value(), 20);
  EXPECT_EQ(grain::knobs().decisions().back().rule, "chunk-sweep");
}

TEST(Tune, CppTunerPeriodic) {
  grain::knob& k = grain::knobs().define_double("test.engine.cpp_tune", -5, 5, 4, "x");
  engine e;
  grain::policy::tune_request r;
  r.parameters = {grain::policy::tuning::parameter::from_knob(k)};
  r.metric = "/app/cost";
  r.strategy = "hill_climb";
  r.trigger = "";
  r.period = std::chrono::milliseconds(1);
  r.window = 1;
  r.skip = 0;
  bool done = false;
  r.on_done = [&](auto& best, double, bool) { done = !best.empty(); };
  e.add_tuner(r);
  for (int i = 0; i < 200 && !done; ++i) {
    const double x = k.value();
    e.feed_sample(snapshot({{"/app/cost", std::fabs(x + 1.5)}}, i));
    e.pump();
    e.run_periodic_now();
  }
  EXPECT_TRUE(done);
  EXPECT_NEAR(k.value(), -1.5, 0.05);
}

TEST(Tune, BadRequestsAreErrors) {
  grain::knobs().define_int("test.engine.badtune", 0, 10, 0, "x");
  engine e;
  EXPECT_NE(load_error(e, "grain.tune{knobs={'nope'}, metric='/x'}").find("known knobs"),
            std::string::npos);
  EXPECT_NE(
      load_error(e, "grain.tune{knobs={'test.engine.badtune'}, metric='/x', strategy='magic'}")
          .find("nelder_mead"),
      std::string::npos);
  EXPECT_NE(load_error(e, "grain.tune{knobs={'test.engine.badtune'}}").find("metric"),
            std::string::npos);
}

// C++ and Lua tuner requests are made into rules in one place: the same request is refused
// for the same reason, and the same trigger reads the same in rules().
TEST(Tune, CppAndLuaTunersAreMadeAlike) {
  grain::knob& k = grain::knobs().define_int("test.engine.alike", 0, 10, 0, "x");
  auto cpp_error = [&](std::string metric, std::string trigger, int period_ms) {
    engine e;
    grain::policy::tune_request r;
    r.parameters = {grain::policy::tuning::parameter::from_knob(k)};
    r.metric = std::move(metric);
    r.trigger = std::move(trigger);
    r.period = std::chrono::milliseconds(period_ms);
    try {
      e.add_tuner(r);
    } catch (const std::invalid_argument& ex) {
      return std::string(ex.what());
    }
    return std::string();
  };
  engine e;
  const std::string field = cpp_error("duration_ns", "sample", 0);
  EXPECT_NE(field.find("event field"), std::string::npos) << field;
  const std::string lua_field =
      load_error(e, "grain.tune{knobs={'test.engine.alike'}, metric='duration_ns'}");
  EXPECT_NE(lua_field.find("grain.tune: " + field), std::string::npos) << lua_field;
  const std::string period = cpp_error("/x", "", 0);
  EXPECT_NE(period.find(">= 1 ms"), std::string::npos) << period;
  const std::string lua_period =
      load_error(e, "grain.tune{knobs={'test.engine.alike'}, metric='/x', trigger=0.5}");
  EXPECT_NE(lua_period.find("grain.tune: " + period), std::string::npos) << lua_period;

  grain::policy::tune_request r;
  r.name = "cpp";
  r.parameters = {grain::policy::tuning::parameter::from_knob(k)};
  r.metric = "/x";
  r.trigger = "iteration";
  e.add_tuner(r);
  r.name = "cpp-periodic";
  r.trigger = "";
  r.period = std::chrono::milliseconds(20);
  e.add_tuner(r);
  e.load_string(
      "grain.tune{knobs={'test.engine.alike'}, metric='/x', trigger='iteration', name='lua'}\n"
      "grain.tune{knobs={'test.engine.alike'}, metric='/x', trigger=20, name='lua-periodic'}\n");
  auto rules = e.rules();
  ASSERT_EQ(rules.size(), 4u);
  EXPECT_EQ(rules[0].trigger, "on iteration");
  EXPECT_EQ(rules[1].trigger, "every 20 ms");
  EXPECT_EQ(rules[2].trigger, rules[0].trigger);
  EXPECT_EQ(rules[3].trigger, rules[1].trigger);
}

// ---- C++ policies ------------------------------------------------------------------------

TEST(CppPolicy, EventAndPeriodicPoliciesRecordDecisions) {
  grain::knob& k = grain::knobs().define_int("test.engine.cpp", 1, 16, 16, "x");
  engine e;
  e.add_policy(
      "iteration",
      [](grain::policy::policy_context& c) {
        auto idle = c.counter("/threads/idle-rate");
        if (idle && *idle > 0.5)
          c.set("test.engine.cpp", c.get("test.engine.cpp") / 2, "idle workers");
        ASSERT_NE(c.event(), nullptr);
      },
      "halve-on-idle");
  int throws = 0;
  e.add_periodic_policy(
      std::chrono::milliseconds(1),
      [&](grain::policy::policy_context&) {
        ++throws;
        throw std::runtime_error("always");
      },
      "thrower");
  e.feed_sample(snapshot({{"/threads{locality#0/total}/idle-rate", 0.9}}));
  e.feed_event(event("iteration", {}));
  e.pump();
  EXPECT_EQ(k.value(), 8);
  auto d = grain::knobs().decisions().back();
  EXPECT_EQ(d.rule, "halve-on-idle");
  ASSERT_EQ(d.trigger.size(), 1u);
  EXPECT_EQ(d.trigger[0].second, 0.9);
  for (int i = 0; i < 5; ++i) e.run_periodic_now();
  EXPECT_EQ(throws, 3);
  bool disabled = false;
  for (auto& r : e.rules())
    if (r.name == "thrower") disabled = r.disabled;
  EXPECT_TRUE(disabled);
}

}  // namespace

namespace {

// policies-lua/tune_knob.lua configured through a global set by an earlier policy.
TEST(ShippedPolicies, TuneKnobThroughGlobals) {
  grain::knob& k = grain::knobs().define_int("test.engine.tune_knob", 1, 100, 90, "x");
  engine e;
  e.load_string(
      "TUNE_KNOB = { knob = 'test.engine.tune_knob', metric = 'duration_ns', trigger = 'step',\n"
      "              strategy = 'hill_climb', window = 1, skip = 0,\n"
      "              on_done = function(best) result = best['test.engine.tune_knob'] end }\n",
      "config.lua");
  e.load_file(GRAIN_SOURCE_DIR "/policies-lua/tune_knob.lua");
  for (int i = 0; i < 300; ++i) {
    const double x = k.value();
    e.feed_event(event("step", {{"duration_ns", 1e6 + 1e3 * (x - 25) * (x - 25)}}));
    e.pump();
  }
  EXPECT_EQ(k.value(), 25);
  EXPECT_EQ(load_error(e, "assert(result == 25)"), "");
  EXPECT_EQ(grain::knobs().decisions().back().rule, "tune_knob");
}

}  // namespace
