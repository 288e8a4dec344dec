// scripts/grain-trace (Python + matplotlib, events read by grain-trace-read or python3-otf2) on
// grain traces and on an OTF2 archive another tool wrote (tests/trace/write_foreign_otf2.py,
// the python otf2 writer). Both readers must give the same summary, character for character.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include "grain/grain.hpp"
#include "trace_util.hpp"

namespace grain::test {
namespace {

const std::string script_path = std::string(GRAIN_SOURCE_DIR) + "/scripts/grain-trace";

// grain-trace-read is built into bin/ (a dependency of this test target).
std::string fast_reader() {
  return std::string(GRAIN_BINARY_DIR) + "/bin/grain-trace-read";
}

// The script with the C++ reader (as a user gets it) and with the Python fallback.
const std::string script = "GRAIN_TRACE_READER='" + fast_reader() + "' " + script_path;
const std::string python_script = "GRAIN_TRACE_READER=python " + script_path;

class GrainTraceScript : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_python_otf2()) GTEST_SKIP() << "/usr/bin/python3 cannot import otf2";
  }
};

TEST_F(GrainTraceScript, SummaryAndPlotOfAGrainTrace) {
  temp_path dir("script");
  {
    grain::runtime rt({"--grain:threads=2", "--grain:trace=" + dir.str(),
                       "--grain:sample-interval=1", "--grain:trace-counters=all"},
                      false);
    auto& k = grain::knobs().define_int("test.script.chunk", 1, 4096, 64, "a test knob");
    // Both workers must appear in the trace even on a loaded machine, where one worker can
    // run all of a small fib: the first task spins until a second one has started, which
    // only the other worker can do (the first one does not yield).
    std::atomic<bool> second_started{false};
    grain::async([&] {
      auto other = grain::async([&] { second_started = true; });
      while (!second_started) std::this_thread::yield();
      other.get();
    }).get();
    grain::async([] { return fib(12); }).get();
    k.set(256, "tasks too small", "coarsen", {{"/threads/time/average", 850}});
    grain::async([] { return fib(12); }).get();
    k.set(128, "idle workers", "refine");
    rt.stop();
  }
  auto r = run_command(script + " summary '" + dir.str() + "'");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* s :
       {"worker 0", "worker 1", "task:long (*)(int)", "Idle", "Decisions (2)", "coarsen", "refine",
        "test.script.chunk", "tasks too small", "/threads/time/average=850"})
    EXPECT_NE(r.output.find(s), std::string::npos) << "no '" << s << "' in\n" << r.output;
  // fib(12) twice: 2 * (fib(13) - 1) = 464 tasks of the fib kind (distinct GUIDs).
  EXPECT_NE(r.output.find(" 464 "), std::string::npos) << r.output;
  auto py = run_command(python_script + " summary '" + dir.str() + "'");
  ASSERT_EQ(py.status, 0) << py.output;
  EXPECT_EQ(r.output, py.output) << "grain-trace-read and the python3-otf2 reader differ";

  const std::string png = (dir / "plot.png").string();
  r = run_command(script + " plot '" + (dir / "traces.otf2").string() + "' -o '" + png +
                  "' --counter '/threads{locality#0/total}/idle-rate' --counter "
                  "'/threads{locality#0/pool#default/worker#*}/count/cumulative'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("2 decisions"), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 10000u);

  r = run_command(script + " plot '" + dir.str() + "' -o '" + png + "' --counter /no/such");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("no metric matches"), std::string::npos) << r.output;
}

TEST_F(GrainTraceScript, WorksOnAnArchiveGrainDidNotWrite) {
  temp_path dir("foreign");
  auto r = run_command("/usr/bin/python3 '" + std::string(GRAIN_SOURCE_DIR) +
                       "/tests/trace/write_foreign_otf2.py' '" + dir.str() + "'");
  ASSERT_EQ(r.status, 0) << r.output;
  expect_otf2_print_accepts((dir / "traces.otf2").string());
  r = run_command(script + " summary '" + (dir / "traces.otf2").string() + "'");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* s :
       {"Thread 0", "Thread 1", "solve", "MPI_Wait", "510.000 us", "90.000 us", "Decisions (0)"})
    EXPECT_NE(r.output.find(s), std::string::npos) << "no '" << s << "' in\n" << r.output;
  auto py = run_command(python_script + " summary '" + (dir / "traces.otf2").string() + "'");
  ASSERT_EQ(py.status, 0) << py.output;
  EXPECT_EQ(r.output, py.output) << "grain-trace-read and the python3-otf2 reader differ";
  const std::string png = (dir / "plot.png").string();
  r = run_command(script + " plot '" + dir.str() + "' -o '" + png + "' --counter temperature");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_GT(fs::file_size(png), 5000u);
}

TEST(GrainTraceRead, BadInputIsReported) {
  auto r = run_command("'" + fast_reader() + "' /no/such/traces.otf2");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("grain-trace-read: cannot open the OTF2 archive /no/such/traces.otf2"),
            std::string::npos)
      << r.output;
  r = run_command("'" + fast_reader() + "' --bogus x.otf2");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("unknown argument --bogus"), std::string::npos) << r.output;
  // The script takes the reader it is given: a wrong GRAIN_TRACE_READER is an error.
  r = run_command("GRAIN_TRACE_READER=/no/such/reader " + script_path + " summary /tmp");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("GRAIN_TRACE_READER=/no/such/reader is not an executable"),
            std::string::npos)
      << r.output;
}

// A Perfetto or Chrome trace given to grain-trace: said so, with where to open it.
TEST(GrainTraceInput, PerfettoTraceIsNamedAsSuch) {
  temp_path dir("script-pftrace");
  fs::create_directories(dir.str());
  std::ofstream(dir / "trace.pftrace") << "x";
  for (const std::string& arg : {dir.str(), (dir / "trace.pftrace").string()}) {
    auto r = run_command(script + " summary '" + arg + "'");
    EXPECT_NE(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("is a Perfetto or Chrome JSON trace"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("https://ui.perfetto.dev"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace grain::test
