// --grain:print-counter (CSV parsed by Python's csv), --grain:list-counters, the run summary
// validated against docs/summary-schema.json, application counters and events, the sampler.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "common/spin.hpp"
#include "grain/clock.hpp"
#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/listener.hpp"

using namespace std::chrono_literals;
namespace gi = grain::instrumentation;

namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "grain_instr_" + std::to_string(::getpid()) + "_" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run_python(const std::string& script_path, const std::string& args) {
  std::string cmd = "/usr/bin/python3 " + script_path + " " + args;
  return std::system(cmd.c_str());
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

void spin_us(std::uint64_t us) {
  grain::test::spin_ns(us * 1000);
}

void some_work(int n = 200) {
  std::vector<grain::future<void>> fs;
  for (int i = 0; i < n; ++i) fs.push_back(grain::async([] { spin_us(50); }));
  for (auto& f : fs) f.get();
}

struct recording_listener : gi::listener {
  std::mutex m;
  std::vector<gi::app_event> events;
  std::atomic<int> samples{0};
  std::atomic<int> finals{0};
  std::atomic<std::size_t> last_size{0};
  void on_sample(const gi::counter_snapshot& s) override {
    samples++;
    if (s.final) finals++;
    last_size = s.values.size();
  }
  void on_event(const gi::app_event& e) override {
    std::lock_guard lk(m);
    events.push_back(e);
  }
};

}  // namespace

TEST(PrintCounter, CsvParsesWithPython) {
  const std::string csv = temp_path("counters.csv");
  {
    grain::runtime rt(
        {"--grain:threads=2", "--grain:print-counter=/threads{locality#0/total}/*",
         "--grain:print-counter=/threads{*}/idle-rate", "--grain:print-counter-interval=20",
         "--grain:print-counter-destination=" + csv},
        false);
    for (int i = 0; i < 5; ++i) {
      some_work();
      std::this_thread::sleep_for(20ms);
    }
  }
  const std::string py = temp_path("check_csv.py");
  write_file(py, R"(
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
assert rows[0] == ['time_s', 'counter', 'value'], rows[0]
times = set(); names = set(); last = -1.0
for r in rows[1:]:
    assert len(r) == 3, r
    t = float(r[0]); assert t >= last, (t, last); last = t
    times.add(t); names.add(r[1])
    if r[2] != '': float(r[2])   # empty = unavailable
assert '/threads{locality#0/total}/count/cumulative' in names
assert '/threads{locality#0/pool#default/worker#1}/idle-rate' in names
assert len(times) >= 3, sorted(times)   # periodic prints plus the one at exit
final = [r for r in rows[1:] if r[1] == '/threads{locality#0/total}/count/cumulative'][-1]
assert float(final[2]) >= 1000, final
print('csv ok:', len(rows) - 1, 'rows,', len(times), 'prints,', len(names), 'counters')
)");
  EXPECT_EQ(run_python(py, csv), 0) << slurp(csv).substr(0, 2000);
  std::remove(csv.c_str());
  std::remove(py.c_str());
}

TEST(PrintCounter, TableAtExitOnly) {
  const std::string out = temp_path("table.txt");
  {
    grain::runtime rt(
        {"--grain:threads=2", "--grain:print-counter=/threads/idle-rate",
         "--grain:print-counter=/threads/count/cumulative", "--grain:print-counter-format=table",
         "--grain:print-counter-destination=" + out},
        false);
    some_work();
  }
  const std::string text = slurp(out);
  EXPECT_NE(text.find("(final)"), std::string::npos) << text;
  EXPECT_NE(text.find("/threads{locality#0/total}/idle-rate"), std::string::npos) << text;
  EXPECT_EQ(text.find("# t ="), text.rfind("# t =")) << "interval 0 prints once, at exit\n" << text;
  std::remove(out.c_str());
}

TEST(PrintCounter, UnknownCounterIsAClearError) {
  try {
    grain::runtime rt({"--grain:threads=1", "--grain:print-counter=/threads/idle-rat"}, false);
    FAIL() << "no error for an unknown counter";
  } catch (const grain::option_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/threads/idle-rat"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--grain:list-counters"), std::string::npos) << msg;
  }
  EXPECT_THROW(grain::runtime({"--grain:threads=1", "--grain:print-counter=idle-rate"}, false),
               grain::option_error);
  EXPECT_THROW(grain::runtime({"--grain:threads=1", "--grain:print-counter=/threads/idle-rate",
                               "--grain:print-counter-format=xml"},
                              false),
               grain::option_error);
  // The runtime can start again after a failed start.
  grain::runtime rt({"--grain:threads=1"}, false);
}

TEST(PrintCounter, UnknownObjectIsAnErrorAtStartWithASuggestion) {
  // A misspelt object used to run the whole program and only then log an error.
  try {
    grain::runtime rt({"--grain:threads=1", "--grain:print-counter=/trheads/idle-rate"}, false);
    FAIL() << "no error at start-up for an unknown counter object";
  } catch (const grain::option_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/trheads/idle-rate"), std::string::npos) << msg;
    EXPECT_NE(msg.find("did you mean /threads/idle-rate"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--grain:list-counters"), std::string::npos) << msg;
  }
  try {
    grain::runtime rt(
        {"--grain:threads=1", "--grain:print-counter={locality#0/total}/threads/idle-rate"}, false);
    FAIL() << "no error for a malformed name";
  } catch (const grain::option_error& e) {
    EXPECT_NE(std::string(e.what()).find("--grain:print-counter"), std::string::npos) << e.what();
  }
  // Application counters and events are defined while the program runs: accepted now,
  // checked at exit.
  grain::runtime rt({"--grain:threads=1", "--grain:print-counter=/app/not-yet-defined",
                     "--grain:print-counter=/events/count/not-yet-raised"},
                    false);
}

TEST(PrintCounter, ListCountersExitsZero) {
  const std::string out = temp_path("list.txt");
  try {
    grain::runtime rt(
        {"--grain:threads=2", "--grain:list-counters", "--grain:print-counter-destination=" + out},
        false);
    FAIL() << "--grain:list-counters must end start-up";
  } catch (const grain::startup_exit& e) {
    EXPECT_EQ(e.code, 0);
  }
  const std::string text = slurp(out);
  for (const char* n :
       {"/threads{locality#0/total}/idle-rate", "/threads{locality#0/total}/time/average",
        "/threads{locality#0/pool#default/worker#1}/count/cumulative",
        "/threads{locality#0/total}/wait-time-inflation", "ratio", "ns", "docs/counters.md, Eq. 1"})
    EXPECT_NE(text.find(n), std::string::npos) << n;
  // Each description says what the counter is in words (a formula alone, or a pointer to a
  // paper the user does not have, is a label): at least four words before any '=' and no
  // reference to anything outside the repository.
  std::istringstream lines(text);
  std::string line;
  int described = 0;
  while (std::getline(lines, line)) {
    if (line.rfind('/', 0) != 0) continue;
    std::istringstream fields(line);
    std::string name, unit;
    fields >> name >> unit;
    std::string desc;
    std::getline(fields, desc);
    const std::string words = desc.substr(0, desc.find('='));
    std::istringstream ws(words);
    int n = 0;
    for (std::string w; ws >> w;) ++n;
    EXPECT_GE(n, 4) << name << ":" << desc;
    EXPECT_EQ(desc.find("seed"), std::string::npos) << name << ":" << desc;
    ++described;
  }
  EXPECT_GT(described, 50);
  std::remove(out.c_str());
}

TEST(Summary, ValidatesAgainstSchema) {
  const std::string json = temp_path("summary.json");
  {
    grain::runtime rt({"--grain:threads=2", "--grain:summary=" + json}, false);
    some_work();
    grain::knob& k = grain::knobs().define_int("test.summary.knob", 0, 10, 3, "a test knob");
    k.set(12, "testing the summary", "summary-test", {{"/threads/idle-rate", 0.25}});
  }
  const std::string py = temp_path("check_summary.py");
  write_file(py, R"(
import json, sys, jsonschema
doc = json.load(open(sys.argv[1]))
schema = json.load(open(sys.argv[2]))
jsonschema.validate(doc, schema)
assert doc['wall_time_s'] > 0
c = doc['counters']
assert c['/threads{locality#0/total}/count/cumulative'] >= 200, c['/threads{locality#0/total}/count/cumulative']
assert 0 <= c['/threads{locality#0/total}/idle-rate'] <= 1
assert c['/threads{locality#0/total}/wait-time-inflation'] is None   # no calibration: unavailable
assert doc['knobs']['test.summary.knob'] == 10
d = [x for x in doc['decisions'] if x['knob'] == 'test.summary.knob'][0]
assert d['old'] == 3 and d['new'] == 10 and d['clamped'] and d['rule'] == 'summary-test', d
assert d['trigger'] == {'/threads/idle-rate': 0.25}, d
assert d['reason'] == 'testing the summary'
# A broken document must fail validation (the schema is not vacuous).
bad = dict(doc); del bad['counters']
try:
    jsonschema.validate(bad, schema); sys.exit('schema accepted a summary without counters')
except jsonschema.ValidationError:
    pass
print('summary ok:', len(c), 'counters,', len(doc['knobs']), 'knobs,', len(doc['decisions']), 'decisions')
)");
  EXPECT_EQ(run_python(py, json + " " GRAIN_SOURCE_DIR "/docs/summary-schema.json"), 0)
      << slurp(json).substr(0, 3000);
  std::remove(json.c_str());
  std::remove(py.c_str());
}

TEST(AppCounters, DefineSampleAndKinds) {
  auto it = grain::counters::define("/app/test-iteration-time", "iteration time", "ns");
  auto total = grain::counters::define("/app/test-bytes", "bytes moved", "bytes",
                                       grain::counters::kind::monotonic);
  auto mean = grain::counters::define("/app/test-residual", "mean residual", "",
                                      grain::counters::kind::average);
  EXPECT_THROW(grain::counters::define("/app/test-bytes", "", "", grain::counters::kind::gauge),
               std::invalid_argument);
  EXPECT_THROW(grain::counters::define("app/no-slash", "", ""), std::invalid_argument);
  EXPECT_FALSE(gi::registry().value("/app/test-iteration-time")->available) << "never sampled";
  grain::sample_value("/app/test-iteration-time", 5);
  it.sample(7);
  total.sample(100);
  grain::sample_value("/app/test-bytes", 50);
  mean.sample(1);
  mean.sample(3);
  EXPECT_EQ(gi::registry().value("/app/test-iteration-time")->value, 7);
  EXPECT_EQ(gi::registry().value("/app/test-bytes")->value, 150);
  EXPECT_EQ(gi::registry().value("/app/test-residual")->value, 2);
  grain::counters::reset();
  EXPECT_EQ(gi::registry().value("/app/test-bytes")->value, 0);
  EXPECT_FALSE(gi::registry().value("/app/test-residual")->available);
  EXPECT_EQ(gi::registry().value("/app/test-iteration-time")->value, 7) << "raw keeps its value";
  // sample_value defines unknown names on first use.
  grain::sample_value("/app/test-auto", 3.5);
  EXPECT_EQ(gi::registry().value("/app/test-auto")->value, 3.5);
  // Concurrent samples lose nothing.
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([] {
      for (int i = 0; i < 10000; ++i) grain::sample_value("/app/test-bytes", 1);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(gi::registry().value("/app/test-bytes")->value, 40000);
}

TEST(AppCounters, EventsReachListenersAndAreCounted) {
  recording_listener l;
  gi::add_listener(&l);
  {
    grain::runtime rt({"--grain:threads=2", "--grain:sample-interval=5"}, false);
    grain::counters::define("/app/test-step-time", "step time", "ns");
    for (int step = 0; step < 3; ++step) {
      const auto t0 = grain::now_ns();
      some_work(20);
      const double d = static_cast<double>(grain::now_ns() - t0);
      grain::sample_value("/app/test-step-time", d);
      grain::event("iteration", {{"duration_ns", d}, {"step", step}});
    }
    std::this_thread::sleep_for(60ms);
    // 5 ms sampling for 60 ms: 12 samples on a quiet machine. A loaded one wakes the sampler
    // late, so wait for the 8 checked below (up to 5 s) rather than fail on the clock.
    for (int i = 0; i < 1000 && l.samples.load() < 8; ++i) std::this_thread::sleep_for(5ms);
    EXPECT_EQ(gi::registry().value("/events/count/iteration")->value, 3);
    auto snap = gi::latest_snapshot();
    EXPECT_NE(snap.find("/app/test-step-time"), nullptr);
    EXPECT_NE(snap.find("/threads{locality#0/total}/idle-rate"), nullptr);
  }
  gi::remove_listener(&l);
  std::vector<std::string> names;
  for (auto& e : l.events) names.push_back(e.name);
  ASSERT_GE(names.size(), 5u);
  EXPECT_EQ(names.front(), "start");
  EXPECT_EQ(names.back(), "stop");
  int iterations = 0;
  for (auto& e : l.events)
    if (e.name == "iteration") {
      EXPECT_EQ(e.get("step"), iterations);
      EXPECT_GT(e.get("duration_ns"), 0);
      EXPECT_EQ(e.get("missing", -1), -1);
      ++iterations;
    }
  EXPECT_EQ(iterations, 3);
  // Periodic samples (waited for above), plus the final snapshot.
  EXPECT_GE(l.samples.load(), 8);
  EXPECT_EQ(l.finals.load(), 1);
  EXPECT_GT(l.last_size.load(), 50u);
}

TEST(Sampler, IntervalZeroSamplesOnlyAtExit) {
  recording_listener l;
  gi::add_listener(&l);
  {
    grain::runtime rt({"--grain:threads=1", "--grain:sample-interval=0"}, false);
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(l.samples.load(), 0);
  }
  gi::remove_listener(&l);
  EXPECT_EQ(l.samples.load(), 1);
  EXPECT_EQ(l.finals.load(), 1);
}

TEST(Sampler, SelfCostCounters) {
  grain::runtime rt({"--grain:threads=2", "--grain:sample-interval=1"}, false);
  grain::counters::reset();
  std::this_thread::sleep_for(200ms);
  const double n = gi::registry().value("/sampler/count/samples")->value;
  const double load = gi::registry().value("/sampler/cpu-load")->value;
  std::printf("sampler: %.0f samples in 200 ms at 1 ms, cpu-load %.4f of one core\n", n, load);
  // ~200 at 1 ms on a quiet machine, 89 once under a loaded CI-like run; the default 10 ms
  // interval would give ~20, so half the ideal count still shows the 1 ms interval acting.
  EXPECT_GT(n, 50);
  // A sanity bound, not the target: on this VM a bare thread waking every 1 ms costs ~2 % of a
  // core, and ~6 % when the host is busy (a CI run failed at 0.062 with the old bound, 0.05).
  // A sampler that busy-waits would be near 1. The figure against the target comes from the
  // benchmark, which measures the wake-up floor in the same run:
  //   grain_instrumentation_tests --gtest_also_run_disabled_tests
  //   --gtest_filter='SamplerBenchmark.*'
  EXPECT_GT(load, 0.0);
  EXPECT_LT(load, 0.25) << "sampling every counter each 1 ms";
}
