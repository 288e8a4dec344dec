// The OTF2 writer against the hook interface (hooks called directly from threads) and with the
// runtime (fib), decisions through the C++ knob API, the option checks, signals and
// std::terminate, otf2-print and ViTE.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "grain/ext/hooks.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/trace.hpp"
#include "grain/instrumentation/trace_reader.hpp"
#include "grain/options.hpp"
#include "trace_util.hpp"

namespace grain::test {
namespace {

using instrumentation::otf2_event;
using instrumentation::read_otf2;
using instrumentation::trace_config;
using instrumentation::trace_session;

std::string anchor(const temp_path& d) {
  return (d / "traces.otf2").string();
}

// ---- the writer alone: hooks called from threads ----------------------------------------

TEST(TraceHooks, ThreadsCallingHooksDirectly) {
  temp_path dir("hooks");
  constexpr unsigned workers = 3;
  constexpr int tasks_per_worker = 2000;
  trace_config cfg;
  cfg.dir = dir.str();
  cfg.workers = workers;
  cfg.counters = false;
  trace_session s(cfg);
  s.start();
  static const char* names[] = {"alpha", "beta", "gamma"};
  std::vector<std::thread> th;
  for (unsigned w = 0; w < workers; ++w)
    th.emplace_back([w] {
      auto& h = grain::hooks();
      std::uint64_t ts = grain::now_ns();
      for (int i = 0; i < tasks_per_worker; ++i) {
        const std::uint64_t guid = (std::uint64_t{w} + 1) << 40 | static_cast<std::uint64_t>(i + 1);
        const std::uint64_t parent = i == 0 ? 0 : ((std::uint64_t{w} + 1) << 40 | 1);
        task_info t{guid, parent, names[i % 3]};
        if (i % 100 == 50) {
          h.idle_begin(w, ++ts);
          h.idle_end(w, ++ts);
        }
        h.phase_begin(w, t, ++ts);
        if (i % 10 == 3) {
          // An inline child inside this task.
          task_info c{guid | (1ull << 39), guid, "inline-child"};
          h.phase_begin(w, c, ++ts);
          h.phase_end(w, c, true, ++ts);
        }
        h.phase_end(w, t, true, ++ts);
      }
    });
  for (auto& t : th) t.join();
  auto st = s.stop();
  EXPECT_EQ(st.errors, 0u);
  EXPECT_EQ(st.task_enters, workers * (tasks_per_worker + tasks_per_worker / 10));
  expect_otf2_print_accepts(anchor(dir));
  auto t = read_otf2(anchor(dir));
  auto f = check_trace(t);
  EXPECT_EQ(f.task_enters, st.task_enters);
  EXPECT_EQ(f.task_leaves, st.task_enters);
  EXPECT_EQ(f.idle_enters, workers * (tasks_per_worker / 100));
  // Locations: workers, the counters, the policy engine; ids rank<<32 | index.
  ASSERT_EQ(t.locations.size(), workers + 2);
  for (unsigned w = 0; w < workers; ++w) {
    ASSERT_TRUE(t.locations.count(w));
    EXPECT_EQ(t.locations.at(w).name, "worker " + std::to_string(w));
    EXPECT_EQ(t.locations.at(w).type, "CPU_THREAD");
  }
  EXPECT_EQ(t.locations.at(workers).name, "runtime counters");
  EXPECT_EQ(t.locations.at(workers).type, "METRIC");
  EXPECT_EQ(t.locations.at(workers + 1).name, "policy engine");
  EXPECT_EQ(t.resolution, 1'000'000'000u);
  EXPECT_GT(t.realtime, 1'600'000'000'000'000'000u);  // a date after 2020
}

// A task that suspends while its inline parent is open under it: on the worker that resumes
// it, the parent is entered again (marked "Resumed inline child") so Enter/Leave stay nested.
TEST(TraceHooks, SuspensionUnderInlineParentMovesToOtherWorker) {
  temp_path dir("chain");
  trace_config cfg;
  cfg.dir = dir.str();
  cfg.workers = 2;
  cfg.counters = false;
  trace_session s(cfg);
  s.start();
  auto& h = grain::hooks();
  task_info parent{11, 0, "parent"}, child{12, 11, "child"};
  std::uint64_t ts = grain::now_ns();
  std::thread([&] {
    h.phase_begin(0, parent, ++ts);
    h.phase_begin(0, child, ++ts);       // run inline by the waiting parent
    h.phase_end(0, child, false, ++ts);  // the child suspends: the user thread leaves worker 0
    h.idle_begin(0, ++ts);
  }).join();
  std::thread([&] {
    h.phase_begin(1, child, ++ts);      // resumed on worker 1
    h.phase_end(1, child, true, ++ts);  // the child finishes; the parent continues here
    h.phase_end(1, parent, true, ++ts);
  }).join();
  auto st = s.stop();
  EXPECT_EQ(st.reentries, 1u);
  expect_otf2_print_accepts(anchor(dir));
  auto t = read_otf2(anchor(dir));
  auto f = check_trace(t);       // nesting checked per location
  EXPECT_EQ(f.task_enters, 3u);  // parent, child, child resumed
  EXPECT_EQ(f.reentries, 1u);
  const auto& w1 = t.locations.at(1).events;
  ASSERT_GE(w1.size(), 2u);
  EXPECT_EQ(w1[0].name, "task:parent");
  ASSERT_TRUE(w1[0].attribute("Resumed inline child"));
  EXPECT_EQ(*w1[0].attribute("Resumed inline child")->as_uint(), 12u);
  EXPECT_EQ(w1[1].name, "task:child");
}

TEST(TraceHooks, ExistingDirectoryIsRefusedUnlessOverwrite) {
  temp_path dir("exists");
  fs::create_directories(dir.str());
  std::ofstream(dir / "keep.txt") << "not ours";
  trace_config cfg;
  cfg.dir = dir.str();
  try {
    trace_session s(cfg);
    FAIL() << "an existing directory was accepted";
  } catch (const grain::option_error& e) {
    EXPECT_NE(std::string(e.what()).find("trace-overwrite"), std::string::npos) << e.what();
  }
  cfg.overwrite = true;
  {
    trace_session s(cfg);
    s.start();
    s.stop();
  }
  {
    trace_session s(cfg);  // the archive from before is replaced
    s.start();
    s.stop();
  }
  EXPECT_TRUE(fs::exists(dir / "keep.txt"));  // other files stay
  expect_otf2_print_accepts(anchor(dir));
}

// ---- with the runtime ---------------------------------------------------------------------

TEST(TraceRuntime, FibTaskEntersMatchPhases) {
  temp_path dir("fib");
  std::uint64_t phases = 0;
  {
    grain::runtime rt({"--grain:threads=2", "--grain:trace=" + dir.str()}, false);
    EXPECT_EQ(grain::async([] { return fib(15); }).get(), 610);
    EXPECT_EQ(grain::async([] { return fib(12); }).get(), 144);
    rt.stop();
    phases = total_phases(rt);
  }
  expect_otf2_print_accepts(anchor(dir));
  auto t = read_otf2(anchor(dir));
  auto f = check_trace(t);
  EXPECT_EQ(f.task_enters, phases);
  // fib(n) spawns fib(n+1) - 1 tasks (every call with n >= 2 spawns one), plus the roots.
  EXPECT_EQ(f.guids.size(), 986u + 232u + 2u);
  // Counters on the METRIC location, one metric class per counter.
  const auto* m = t.location("runtime counters");
  ASSERT_TRUE(m);
  bool cumulative = false;
  for (auto& e : m->events) {
    EXPECT_EQ(e.type, otf2_event::kind::metric);
    if (e.name == "/threads{locality#0/total}/count/cumulative") {
      cumulative = true;
      EXPECT_EQ(t.metrics.at(e.ref).mode, "ACCUMULATED_START");
    }
  }
  EXPECT_TRUE(cumulative) << "no /threads{locality#0/total}/count/cumulative samples";
}

// The tasks of a task_group are tasks like any other in a trace: every one an Enter and a
// Leave of its named region, with its GUID and its parent's, whether the owner ran it inline or
// a thief did.
long group_tree(int depth) {
  if (depth == 0) return 1;
  long r[4] = {};
  grain::task_group g;
  for (int i = 0; i < 4; ++i)
    g.run(grain::annotate("group-node", [&r, i, depth] { r[i] = group_tree(depth - 1); }));
  g.wait();
  return 1 + r[0] + r[1] + r[2] + r[3];
}

TEST(TraceRuntime, TaskGroupTasksAreTracedWithTheirIds) {
  temp_path dir("group");
  std::uint64_t phases = 0;
  {
    grain::runtime rt({"--grain:threads=2", "--grain:trace=" + dir.str()}, false);
    EXPECT_EQ(grain::async([] { return group_tree(6); }).get(), 5461);  // (4^7 - 1) / 3
    rt.stop();
    phases = total_phases(rt);
  }
  expect_otf2_print_accepts(anchor(dir));
  auto t = read_otf2(anchor(dir));
  auto f = check_trace(t);  // GUIDs, parent GUIDs known, Enter/Leave nesting
  EXPECT_EQ(f.task_enters, phases);
  // A task's phases share its GUID (one that waited for a thief's task is entered again).
  std::set<std::uint64_t> group_tasks;
  for (auto& [id, loc] : t.locations)
    for (auto& e : loc.events)
      if (e.type == otf2_event::kind::enter && t.regions.at(e.ref).name == "task:group-node")
        if (auto* g = e.attribute("GUID"); g && g->as_uint()) group_tasks.insert(*g->as_uint());
  EXPECT_EQ(group_tasks.size(), 5460u);  // every node but the root is a task of a group
}

TEST(TraceRuntime, DecisionsThroughTheKnobApi) {
  temp_path dir("knobs");
  {
    grain::runtime rt({"--grain:threads=2", "--grain:trace=" + dir.str(),
                       "--grain:trace-counters=/threads/idle-rate"},
                      false);
    auto& k = grain::knobs().define_int("test.trace.grain", 1, 1000, 10, "a test knob");
    k.set(64, "idle rate too high", "grow-grain", {{"/threads/idle-rate", 0.42}});
    grain::async([] { return fib(8); }).get();
    k.set(5000, "clamped request", "grow-grain");  // clamped to 1000
    k.set(32, "back", "shrink");
    rt.stop();
  }
  expect_otf2_print_accepts(anchor(dir));
  auto t = read_otf2(anchor(dir));
  check_trace(t);
  // --grain:trace-counters: only that counter (the short name is the locality total).
  const auto* m = t.location("runtime counters");
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->events.empty());
  // (and the knobs: their values are metrics of this METRIC location, not of the policy
  // engine's CPU thread, docs/tracing.md "Other readers")
  std::vector<double> knob_values;
  for (auto& e : m->events) {
    if (e.name == "knob:test.trace.grain") {
      knob_values.push_back(e.value);
      EXPECT_EQ(t.metrics.at(e.ref).mode, "ABSOLUTE_NEXT");
    } else if (e.name.rfind("knob:", 0) != 0) {
      EXPECT_EQ(e.name, "/threads{locality#0/total}/idle-rate");
    }
  }
  const auto* p = t.location("policy engine");
  ASSERT_TRUE(p);
  struct seen {
    std::string rule;
    double old_v, new_v;
    std::string reason;
  };
  std::vector<seen> decisions;
  std::string reason;
  for (auto& e : p->events) {
    if (e.type == otf2_event::kind::enter && e.name.rfind("policy:", 0) == 0) {
      auto* knob = e.attribute("knob");
      ASSERT_TRUE(knob);
      if (std::get<std::string>(knob->value) != "test.trace.grain") continue;
      ASSERT_TRUE(e.attribute("old_value") && e.attribute("new_value") && e.attribute("rule"));
      decisions.push_back({std::get<std::string>(e.attribute("rule")->value),
                           *e.attribute("old_value")->as_double(),
                           *e.attribute("new_value")->as_double(), ""});
      EXPECT_EQ(e.name, "policy:" + decisions.back().rule);
      if (decisions.size() == 1) {
        auto* trig = e.attribute("trigger:/threads/idle-rate");
        ASSERT_TRUE(trig);
        EXPECT_DOUBLE_EQ(*trig->as_double(), 0.42);
      }
      if (decisions.size() == 2) {
        ASSERT_TRUE(e.attribute("clamped"));
        EXPECT_EQ(*e.attribute("clamped")->as_uint(), 1u);
      }
    } else if (e.type == otf2_event::kind::parameter_string && e.name == "reason" &&
               !decisions.empty() && decisions.back().reason.empty()) {
      decisions.back().reason = e.text;
    } else {
      EXPECT_NE(e.type, otf2_event::kind::metric) << "a metric on the policy engine: " << e.name;
    }
  }
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_EQ(decisions[0].rule, "grow-grain");
  EXPECT_EQ(decisions[0].old_v, 10);
  EXPECT_EQ(decisions[0].new_v, 64);
  EXPECT_EQ(decisions[0].reason, "idle rate too high");
  EXPECT_EQ(decisions[1].old_v, 64);
  EXPECT_EQ(decisions[1].new_v, 1000);
  EXPECT_EQ(decisions[2].rule, "shrink");
  EXPECT_EQ(decisions[2].old_v, 1000);
  EXPECT_EQ(decisions[2].new_v, 32);
  // The knob as a step curve: its value before the first decision, then each new value.
  ASSERT_GE(knob_values.size(), 4u);
  EXPECT_EQ(knob_values.front(), 10);
  EXPECT_EQ(knob_values.back(), 32);
}

// The decision record carries the knob's type: an integer knob's old and new values are also
// written as OTF2 integers (ParameterInt), a real knob's only as doubles, with their fraction.
TEST(TraceRuntime, DecisionValuesKeepTheKnobsType) {
  temp_path dir("types");
  {
    grain::runtime rt({"--grain:threads=1", "--grain:trace=" + dir.str()}, false);
    auto& i = grain::knobs().define_int("test.trace.int", 1, 1000, 10, "an integer knob");
    auto& r = grain::knobs().define_double("test.trace.real", 0, 1, 0.5, "a real knob");
    i.set(64, "int", "int-rule");
    r.set(0.25, "real", "real-rule");
    rt.stop();
  }
  auto t = read_otf2(anchor(dir));
  const auto* p = t.location("policy engine");
  ASSERT_TRUE(p);
  std::string rule;  // of the decision whose events follow
  std::vector<std::pair<std::string, double>> ints;
  double real_new = -1;
  for (auto& e : p->events) {
    if (e.type == otf2_event::kind::enter && e.name.rfind("policy:", 0) == 0) {
      rule = e.name;
      if (rule == "policy:real-rule") real_new = *e.attribute("new_value")->as_double();
    } else if (e.type == otf2_event::kind::parameter_int) {
      ints.emplace_back(rule + " " + e.name, e.value);
    }
  }
  EXPECT_EQ(ints,
            (std::vector<std::pair<std::string, double>>{{"policy:int-rule old_value (int)", 10},
                                                         {"policy:int-rule new_value (int)", 64}}));
  EXPECT_DOUBLE_EQ(real_new, 0.25);
}

TEST(TraceRuntime, OptionErrors) {
  temp_path dir("opt");
  fs::create_directories(dir.str());
  EXPECT_THROW(grain::runtime({"--grain:threads=1", "--grain:trace=" + dir.str()}, false),
               grain::option_error);
  EXPECT_THROW(
      grain::runtime(
          {"--grain:threads=1", "--grain:trace=" + dir.str(), "--grain:trace-format=xml"}, false),
      grain::option_error);
  {
    grain::runtime rt(
        {"--grain:threads=1", "--grain:trace=" + dir.str(), "--grain:trace-overwrite"}, false);
    grain::async([] { return fib(5); }).get();
  }
  expect_otf2_print_accepts(anchor(dir));
}

// ---- complete archives when the program dies ------------------------------------------------

// Runs `body` in a child process; returns its wait status.
template <class F>
int in_child(F body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return st;
}

void busy_runtime_then(const std::string& dir, void (*die)()) {
  grain::runtime rt({"--grain:threads=2", "--grain:trace=" + dir}, false);
  std::atomic<bool> go{true};
  // Work in flight (and suspended tasks) when the program dies.
  std::vector<grain::future<long>> fs;
  for (int i = 0; i < 4; ++i) fs.push_back(grain::async([] { return fib(12); }));
  for (auto& f : fs) f.get();
  auto forever = grain::async([&go] {
    long s = 0;
    while (go.load()) s += fib(6);
    return s;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  die();
  std::this_thread::sleep_for(std::chrono::seconds(10));  // the signal path ends us first
  go = false;
  forever.get();
}

TEST(TraceDeath, SigtermLeavesACompleteArchive) {
  temp_path dir("sigterm");
  const int st =
      in_child([&] { busy_runtime_then(dir.str(), [] { ::kill(::getpid(), SIGTERM); }); });
  ASSERT_TRUE(WIFSIGNALED(st)) << "status " << st;
  EXPECT_EQ(WTERMSIG(st), SIGTERM);
  expect_otf2_print_accepts(anchor(dir));
  auto t = read_otf2(anchor(dir));
  auto f = check_trace(t);
  EXPECT_GT(f.task_enters, 4 * 377u);
}

TEST(TraceDeath, SigintLeavesACompleteArchive) {
  temp_path dir("sigint");
  const int st =
      in_child([&] { busy_runtime_then(dir.str(), [] { ::kill(::getpid(), SIGINT); }); });
  ASSERT_TRUE(WIFSIGNALED(st)) << "status " << st;
  EXPECT_EQ(WTERMSIG(st), SIGINT);
  expect_otf2_print_accepts(anchor(dir));
  check_trace(read_otf2(anchor(dir)));
}

// A dropped ssh session (SIGHUP) and Ctrl-\ (SIGQUIT) end the run like SIGTERM: a complete
// trace, then the signal's own end (SIGQUIT's core dump is turned off here).
TEST(TraceDeath, SighupAndSigquitLeaveACompleteArchive) {
  for (const int sig : {SIGHUP, SIGQUIT}) {
    SCOPED_TRACE(::strsignal(sig));
    temp_path dir(sig == SIGHUP ? "sighup" : "sigquit");
    static int g_sig;
    g_sig = sig;
    const int st = in_child([&] {
      rlimit none{0, 0};
      ::setrlimit(RLIMIT_CORE, &none);
      busy_runtime_then(dir.str(), [] { ::kill(::getpid(), g_sig); });
    });
    ASSERT_TRUE(WIFSIGNALED(st)) << "status " << st;
    EXPECT_EQ(WTERMSIG(st), sig);
    expect_otf2_print_accepts(anchor(dir));
    check_trace(read_otf2(anchor(dir)));
  }
}

TEST(TraceDeath, UncaughtExceptionLeavesACompleteArchive) {
  temp_path dir("throw");
  const int st = in_child([&] {
    busy_runtime_then(dir.str(), [] {
      // An exception nobody catches: std::terminate, like one escaping main.
      std::thread([] { throw std::runtime_error("main threw"); }).join();
    });
  });
  ASSERT_TRUE(WIFSIGNALED(st)) << "status " << st;
  EXPECT_EQ(WTERMSIG(st), SIGABRT);
  expect_otf2_print_accepts(anchor(dir));
  check_trace(read_otf2(anchor(dir)));
}

// ---- viewers ------------------------------------------------------------------------------

TEST(TraceViewers, ViteRendersTheArchive) {
  if (!have_command("vite") || !have_command("xvfb-run")) GTEST_SKIP() << "vite/xvfb-run missing";
  temp_path dir("vite");
  {
    grain::runtime rt({"--grain:threads=2", "--grain:trace=" + dir.str()}, false);
    auto& k = grain::knobs().define_int("test.trace.vite", 1, 100, 10, "a test knob");
    grain::async([] { return fib(10); }).get();
    k.set(20, "test", "vite-test");
    grain::async([] { return fib(10); }).get();
  }
  const std::string svg = (dir / "vite.svg").string();
  // ViTE has no batch mode, but -e exports the rendered trace as SVG and exits. It runs under
  // a timeout in case it stays up; its parser reports "N errors and M warnings".
  auto r = run_command("timeout 60 xvfb-run -a vite -e '" + svg + "' '" + anchor(dir) + "'");
  EXPECT_TRUE(r.status == 0 || r.status == 124) << r.output;
  EXPECT_NE(r.output.find("0 errors and 0 warnings were found"), std::string::npos)
      << "ViTE said: " << r.output;
  EXPECT_EQ(r.output.find("Error"), std::string::npos) << "ViTE said: " << r.output;
  ASSERT_TRUE(fs::exists(svg)) << r.output;
  EXPECT_GT(fs::file_size(svg), 1000u);
}

}  // namespace
}  // namespace grain::test

namespace grain::test {
namespace {

// ---- Perfetto / Chrome JSON -----------------------------------------------------------------

TEST(TracePerfetto, JsonParsesAndSlicesMatchTasks) {
  if (!have_command("python3")) GTEST_SKIP() << "python3 missing";
  temp_path dir("perfetto");
  std::uint64_t phases = 0;
  {
    grain::runtime rt(
        {"--grain:threads=2", "--grain:trace=" + dir.str(), "--grain:trace-format=chrome"}, false);
    auto& k = grain::knobs().define_double("test.trace.perfetto", 0, 1, 0.5, "a test knob");
    EXPECT_EQ(grain::async([] { return fib(14); }).get(), 377);
    k.set(0.25, "perfetto test", "json-rule", {{"/threads/idle-rate", 0.5}});
    rt.stop();
    phases = total_phases(rt);
  }
  const std::string json = (dir / "trace.json").string();
  ASSERT_TRUE(fs::exists(json));
  std::ofstream(dir / "check.py") << R"(
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
x = [e for e in ev if e["ph"] == "X" and e.get("cat") == "task"]
phases = [e for e in x if "resumed_child" not in e["args"]]
guids = {e["args"]["guid"] for e in x}
bad_parent = [e for e in x if e["args"]["parent"] != "0" and e["args"]["parent"] not in guids]
# Ids are decimal strings (JavaScript's JSON.parse rounds numbers above 2^53).
ids = [v for e in x for k, v in e["args"].items() if k in ("guid", "parent", "resumed_child")]
print("nonstring_ids", sum(1 for v in ids if not (isinstance(v, str) and v.isdigit())))
print("big_ids", sum(1 for v in ids if int(v) >= 2**53))
names = sorted(e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name")
counters = [e for e in ev if e["ph"] == "C" and e["name"].startswith("/threads")]
inst = [e for e in ev if e["ph"] == "i" and e["args"].get("knob") == "test.trace.perfetto"]
neg = [e for e in x if e["dur"] < 0]
print("slices", len(phases))
print("bad_parents", len(bad_parent))
print("negative", len(neg))
print("threads", "|".join(names))
print("counters", len(counters))
print("decision", inst[0]["name"], inst[0]["args"]["old_value"], inst[0]["args"]["new_value"],
      inst[0]["args"]["reason"], inst[0]["args"]["trigger:/threads/idle-rate"])
)";
  auto r = run_command("python3 '" + (dir / "check.py").string() + "' '" + json + "'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("slices " + std::to_string(phases) + "\n"), std::string::npos)
      << r.output << "(task phases: " << phases << ")";
  EXPECT_NE(r.output.find("bad_parents 0\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("negative 0\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nonstring_ids 0\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("threads policy engine|runtime counters|worker 0|worker 1\n"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("counters 0\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("decision policy:json-rule 0.5 0.25 perfetto test 0.5\n"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace grain::test
