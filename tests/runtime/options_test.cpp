// Option parsing (lists in repeatable options and their environment variables), the start-up
// checks of the core options (--grain:threads against the machine), --grain:help and
// --grain:version, and the SIGINT/SIGTERM handling a runtime installs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "grain/async.hpp"
#include "grain/options.hpp"
#include "grain/topology.hpp"
#include "runtime_fixture.hpp"

namespace grain::test {
namespace {

const std::vector<option_spec> specs = {
    {"name", "a single value", true, false, "X"},
    {"list", "repeatable", true, true, "X"},
    {"flag", "a flag", false, false, ""},
};

// Sets an environment variable for one test and removes it afterwards.
struct env_var {
  std::string name;
  env_var(std::string n, const char* value) : name(std::move(n)) {
    ::setenv(name.c_str(), value, 1);
  }
  ~env_var() { ::unsetenv(name.c_str()); }
};

TEST(Options, RepeatableOptionTakesACommaSeparatedList) {
  options o;
  o.parse({"--grain:list=a,b", "--grain:list=c", "--grain:name=x,y"}, specs, false);
  EXPECT_EQ(o.get_all("list"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(o.get("name"), "x,y");  // a single-valued option keeps its commas
}

TEST(Options, EnvironmentListAcceptsWhatTheCommandLineAccepts) {
  {
    env_var e("GRAIN_LIST", "a,b");
    options o;
    o.parse({}, specs, true);
    EXPECT_EQ(o.get_all("list"), (std::vector<std::string>{"a", "b"}));
  }
  {
    env_var e("GRAIN_LIST", "a;b,c;");
    options o;
    o.parse({}, specs, true);
    EXPECT_EQ(o.get_all("list"), (std::vector<std::string>{"a", "b", "c"}));
  }
  {
    env_var e("GRAIN_LIST", "ignored");  // the command line wins
    options o;
    o.parse({"--grain:list=x"}, specs, true);
    EXPECT_EQ(o.get_all("list"), (std::vector<std::string>{"x"}));
  }
}

TEST(Options, EmptyRepeatableValueStaysAValue) {
  options o;
  o.parse({"--grain:list="}, specs, false);
  ASSERT_TRUE(o.has("list"));
  EXPECT_EQ(o.get("list", "fallback"), "");
}

unsigned processing_units() {
  return static_cast<unsigned>(topology::load().pus().size());
}

TEST(StartupChecks, FarMoreThreadsThanProcessingUnitsNeedsOversubscribe) {
  const unsigned pus = processing_units();
  const std::string too_many = "--grain:threads=" + std::to_string(4 * pus + 1);
  try {
    start_runtime({too_many});
    FAIL() << too_many << " on " << pus << " processing units was accepted";
  } catch (const option_error& e) {
    EXPECT_NE(std::string(e.what()).find("--grain:oversubscribe"), std::string::npos) << e.what();
  }
  // Moderate oversubscription only warns; a flag says "I mean it".
  EXPECT_EQ(start_runtime({"--grain:threads=" + std::to_string(pus + 1)})->num_workers(), pus + 1);
  if (pus <= 16) {  // a few dozen threads at most
    EXPECT_EQ(start_runtime({too_many, "--grain:oversubscribe"})->num_workers(), 4 * pus + 1);
  }
}

TEST(StartupChecks, HelpAndVersionPrintAndEndStartUp) {
  testing::internal::CaptureStdout();
  EXPECT_THROW(start_runtime({"--grain:version"}), startup_exit);
  const std::string version = testing::internal::GetCapturedStdout();
  // The version, then what the build has (the optional dependencies: PAPI, MPI, OTF2, hwloc).
  EXPECT_EQ(version.rfind(std::string("grain ") + options::version() + "\nbuilt with: ", 0), 0u)
      << version;
  for (const char* part : {"PAPI ", "MPI ", "OTF2 ", "hwloc "})
    EXPECT_NE(version.find(part), std::string::npos) << part << " missing in " << version;
  EXPECT_NE(std::string(options::version()), "");

  testing::internal::CaptureStdout();
  EXPECT_THROW(start_runtime({"--grain:help"}), startup_exit);
  const std::string help = testing::internal::GetCapturedStdout();
  for (const char* o : {"--grain:threads=N", "--grain:help", "--grain:version", "GRAIN_THREADS"})
    EXPECT_NE(help.find(o), std::string::npos) << o << " missing in\n" << help;
}

// ---- scenarios in a fresh process -----------------------------------------------------------
//
// Signals and process bindings are tried in a fresh process: this test binary again, running
// only RuntimeScenario.Run with GRAIN_RUNTIME_SCENARIO set. Not a fork of this (threaded)
// process: the sanitizers' runtimes do not support starting threads in such a child.

int run_scenario(const std::string& name) {
  const std::string filter = "--gtest_filter=RuntimeScenario.Run";
  char* argv[] = {const_cast<char*>("/proc/self/exe"), const_cast<char*>(filter.c_str()), nullptr};
  ::setenv("GRAIN_RUNTIME_SCENARIO", name.c_str(), 1);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ::unsetenv("GRAIN_RUNTIME_SCENARIO");
  if (rc != 0) return -1;
  int st = 0;
  ::waitpid(pid, &st, 0);
  return st;
}

std::string status_text(int st) {
  if (WIFEXITED(st)) return "exit " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return std::string("signal ") + ::strsignal(WTERMSIG(st));
  return "status " + std::to_string(st);
}

// Lock-free, so usable in a handler; atomic, since the handler runs on the runtime's signal thread.
std::atomic<int> g_app_handler_ran{0};

// A background job of a non-interactive shell starts with SIGINT ignored: it stays ignored,
// and SIGTERM still ends the process.
void ignored_sigint_then_sigterm() {
  ::signal(SIGINT, SIG_IGN);
  auto rt = start_runtime({"--grain:threads=2"});
  ::kill(::getpid(), SIGINT);
  struct sigaction sa {};
  ::sigaction(SIGINT, nullptr, &sa);
  if (sa.sa_handler != SIG_IGN) ::_exit(10);  // the runtime took it over
  ::kill(::getpid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::seconds(20));  // SIGTERM ends us first
  ::_exit(11);
}

// An application handler that survives SIGINT: the second signal (SIGTERM, default action)
// must still end the process, not vanish into a pipe nobody reads any more.
void handled_sigint_then_sigterm() {
  ::signal(SIGINT, [](int) { g_app_handler_ran = 1; });
  auto rt = start_runtime({"--grain:threads=2"});
  ::kill(::getpid(), SIGINT);
  for (int i = 0; i < 2000 && !g_app_handler_ran; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!g_app_handler_ran) ::_exit(12);
  ::kill(::getpid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::seconds(20));
  ::_exit(13);
}

// mpirun, taskset and Slurm bind each process to some PUs: the workers must stay on those
// (two ranks bound to cores 0 and 1 once both pinned their worker to PU 0), and the default
// worker count is the number of PUs the process may use. Bound here to the machine's last PU.
void bound_to_one_pu() {
  const topology whole = topology::load(process_binding::ignore);
  if (whole.pus().size() < 2) ::_exit(0);  // nothing to leave out on one PU
  const unsigned cpu = whole.pus().back().os_index;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) ::_exit(20);
  const topology bound = topology::load();
  if (bound.pus().size() != 1 || bound.pus()[0].os_index != cpu) ::_exit(21);
  if (!bound.restricted_to_process_binding() || whole.restricted_to_process_binding()) ::_exit(22);
  if (bound.describe().find("the process's CPU binding") == std::string::npos) ::_exit(23);
  {
    auto rt = start_runtime({});
    if (rt->num_workers() != 1) ::_exit(24);
    // The worker runs on the bound PU (it was pinned to PU 0 of the whole machine before).
    const bool on_cpu = grain::async([cpu] {
                          cpu_set_t mine;
                          return ::sched_getaffinity(0, sizeof mine, &mine) == 0 &&
                                 CPU_COUNT(&mine) == 1 && CPU_ISSET(cpu, &mine);
                        }).get();
    if (!on_cpu) ::_exit(25);
  }
  if (start_runtime({"--grain:ignore-process-mask"})->num_workers() != whole.pus().size())
    ::_exit(26);
  ::_exit(0);
}

TEST(RuntimeScenario, Run) {
  const char* name = std::getenv("GRAIN_RUNTIME_SCENARIO");
  if (!name) GTEST_SKIP() << "runs only as the child process of another test";
  const std::string s = name;
  if (s == "ignored") ignored_sigint_then_sigterm();
  if (s == "handled") handled_sigint_then_sigterm();
  if (s == "bound") bound_to_one_pu();
  ::_exit(14);  // unknown scenario
}

TEST(ProcessBinding, WorkersStayOnThePusTheProcessIsBoundTo) {
  const int st = run_scenario("bound");
  ASSERT_TRUE(WIFEXITED(st)) << status_text(st);
  EXPECT_EQ(WEXITSTATUS(st), 0) << "failed check " << WEXITSTATUS(st) << " (see bound_to_one_pu)";
}

TEST(RuntimeSignals, InheritedIgnoredSigintStaysIgnoredAndSigtermStillEnds) {
  const int st = run_scenario("ignored");
  ASSERT_TRUE(WIFSIGNALED(st)) << status_text(st);
  EXPECT_EQ(WTERMSIG(st), SIGTERM);
}

TEST(RuntimeSignals, SecondSignalIsNotSwallowed) {
  const int st = run_scenario("handled");
  ASSERT_TRUE(WIFSIGNALED(st)) << status_text(st);
  EXPECT_EQ(WTERMSIG(st), SIGTERM);
}

}  // namespace
}  // namespace grain::test
