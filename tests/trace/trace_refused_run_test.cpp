// A run refused at start-up leaves the trace directory as it found it: an extension configured
// or started after the trace rejects the run (a missing policy file, a failing start), the
// trace's own options are malformed, or a session is made and never started. No empty archive
// in a new directory (a second try with the same --grain:trace would be refused for it), and
// with --grain:trace-overwrite the earlier trace is still there.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "grain/ext/extension.hpp"
#include "grain/ext/runtime_core.hpp"
#include "grain/instrumentation/trace.hpp"
#include "grain/options.hpp"
#include "trace_util.hpp"

namespace grain::test {
namespace {

using instrumentation::read_otf2;
using instrumentation::trace_config;
using instrumentation::trace_session;

// Every file under `dir` with its contents, so that "as it found it" can be compared exactly.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (auto& e : fs::recursive_directory_iterator(dir))
    files[fs::relative(e.path(), dir).string()] = e.is_regular_file() ? slurp(e.path()) : "<dir>";
  return files;
}

std::uint64_t traced_tasks(const fs::path& dir) {
  return check_trace(read_otf2((dir / "traces.otf2").string())).task_enters;
}

// A traced run of fib(n) into dir; returns the tasks in its archive.
std::uint64_t trace_fib(const fs::path& dir, int n, bool overwrite) {
  {
    std::vector<std::string> args = {"--grain:threads=2", "--grain:trace=" + dir.string()};
    if (overwrite) args.push_back("--grain:trace-overwrite");
    grain::runtime rt(args, false);
    grain::async([n] { return fib(n); }).get();
  }
  return traced_tasks(dir);
}

// Runs the runtime with `args` and expects it refused with an option_error naming `what`.
void expect_refused(const std::vector<std::string>& args, const std::string& what) {
  try {
    grain::runtime rt(args, false);
    ADD_FAILURE() << "the run was not refused";
  } catch (const grain::option_error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(TraceRefusedRun, ANewDirectoryIsNotLeftBehind) {
  temp_path dir("refused-new");
  for (const char* format : {"otf2", "perfetto", "chrome", "chrome.gz"}) {
    expect_refused(
        {"--grain:threads=2", "--grain:trace=" + dir.str(),
         std::string("--grain:trace-format=") + format, "--grain:policy=/nonexistent/policy.lua"},
        "policy.lua");
    EXPECT_FALSE(fs::exists(dir.str())) << "a refused run left its " << format << " trace";
  }
  // So the same command, corrected, runs.
  EXPECT_GE(trace_fib(dir.str(), 10, false), 89u);  // fib(10)'s 88 and the root
}

TEST(TraceRefusedRun, TheTraceAnOverwriteWasToReplaceStays) {
  temp_path dir("refused-overwrite");
  const std::uint64_t before = trace_fib(dir.str(), 10, false);
  ASSERT_LT(before, 233u);
  std::ofstream(dir / "notes.txt") << "the user's own file";
  const auto files = snapshot(dir.str());
  expect_refused({"--grain:threads=2", "--grain:trace=" + dir.str(), "--grain:trace-overwrite",
                  "--grain:policy=/nonexistent/policy.lua"},
                 "policy.lua");
  EXPECT_EQ(snapshot(dir.str()), files) << "the refused run changed the directory";
  expect_otf2_print_accepts((dir / "traces.otf2").string());
  EXPECT_EQ(traced_tasks(dir.str()), before);
  // A run that goes ahead replaces it, and nothing set aside remains.
  EXPECT_GE(trace_fib(dir.str(), 12, true), 233u);
  EXPECT_EQ(slurp(dir / "notes.txt"), "the user's own file");
  for (auto& e : fs::directory_iterator(dir.str()))
    EXPECT_NE(e.path().filename().string()[0], '.') << e.path() << " was left in the directory";
}

TEST(TraceRefusedRun, AnExistingDirectoryWithoutOverwriteKeepsItsTrace) {
  temp_path dir("refused-exists");
  trace_fib(dir.str(), 10, false);
  const auto files = snapshot(dir.str());
  expect_refused({"--grain:threads=2", "--grain:trace=" + dir.str()}, "the directory exists");
  EXPECT_EQ(snapshot(dir.str()), files) << "the refused run changed the directory";
}

// An extension after the trace fails in start(): the trace had started recording.
class failing_start final : public extension {
 public:
  std::string name() const override { return "failing-start"; }
  void start(runtime_core&) override { throw std::runtime_error("failing-start: refused"); }
};

TEST(TraceRefusedRun, AnExtensionStartedAfterTheTraceRefusesIt) {
  temp_path dir("refused-started");
  std::vector<std::unique_ptr<extension>> exts;
  exts.push_back(instrumentation::make_trace_extension());
  exts.push_back(std::make_unique<failing_start>());
  try {
    runtime_core rt({"--grain:threads=2", "--grain:trace=" + dir.str()}, std::move(exts), false);
    ADD_FAILURE() << "the run was not refused";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "failing-start: refused");
  }
  EXPECT_FALSE(fs::exists(dir.str())) << "a refused run left its trace directory";
}

TEST(TraceRefusedRun, AMalformedCounterPatternLeavesNoDirectory) {
  temp_path dir("refused-pattern");
  trace_config cfg;
  cfg.dir = dir.str();
  cfg.counter_patterns = {"threads/no-leading-slash"};
  EXPECT_THROW(trace_session s(cfg), grain::option_error);
  EXPECT_FALSE(fs::exists(dir.str()));
}

TEST(TraceRefusedRun, ASessionNeverStartedLeavesTheDirectoryAsItWas) {
  temp_path dir("never-started");
  trace_config cfg;
  cfg.dir = dir.str();
  { trace_session s(cfg); }
  EXPECT_FALSE(fs::exists(dir.str()));

  // An existing directory that holds no trace stays, with its contents.
  fs::create_directories(dir.str());
  std::ofstream(dir / "keep.txt") << "x";
  cfg.overwrite = true;
  { trace_session s(cfg); }
  EXPECT_EQ(snapshot(dir.str()), (std::map<std::string, std::string>{{"keep.txt", "x"}}));

  // One that holds a trace keeps it.
  {
    trace_session s(cfg);
    s.start();
    s.stop();
  }
  const auto files = snapshot(dir.str());
  { trace_session s(cfg); }
  EXPECT_EQ(snapshot(dir.str()), files);
  // A session abandoned after it has written its trace leaves that trace.
  {
    trace_session s(cfg);
    s.start();
    s.stop();
    s.abandon();
  }
  expect_otf2_print_accepts((dir / "traces.otf2").string());
  const auto written = snapshot(dir.str());
  EXPECT_NE(written, files);  // the new trace replaced the earlier one
  // One abandoned while recording puts the earlier trace back.
  {
    trace_session s(cfg);
    s.start();
    s.abandon();
    EXPECT_FALSE(s.recording());
  }
  EXPECT_EQ(snapshot(dir.str()), written);
  expect_otf2_print_accepts((dir / "traces.otf2").string());
}

}  // namespace
}  // namespace grain::test
