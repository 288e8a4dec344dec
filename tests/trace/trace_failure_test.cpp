// Traces when things go wrong: a full disk (RLIMIT_FSIZE in a child process stands in for it:
// writes fail with EFBIG, for any user), a crash in a task (abort, a null dereference), SIGINT
// inherited as ignored, a file given as the trace directory; and what identifies the run in
// the archive (machine name, version, command line).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <thread>

#include "grain/grain.hpp"
#include "grain/instrumentation/trace_reader.hpp"
#include "grain/options.hpp"
#include "trace_util.hpp"

namespace grain::test {
namespace {

using instrumentation::read_otf2;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Runs `body` in a child process whose stdout and stderr go to `log`; returns its wait status.
// The child dumps no core (the crash tests crash on purpose).
template <class F>
int in_child(const fs::path& log, F body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    if (std::FILE* f = std::freopen(log.c_str(), "w", stderr)) {
      ::dup2(::fileno(f), 1);
      ::setvbuf(stdout, nullptr, _IONBF, 0);
    }
    body();
    ::_exit(0);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return st;
}

// Files larger than `bytes` cannot be written (EFBIG), as on a full disk.
void limit_file_size(rlim_t bytes) {
  ::signal(SIGXFSZ, SIG_IGN);
  rlimit r{bytes, bytes};
  ::setrlimit(RLIMIT_FSIZE, &r);
}

std::string status_text(int st) {
  if (WIFEXITED(st)) return "exit " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return std::string("signal ") + ::strsignal(WTERMSIG(st));
  return "status " + std::to_string(st);
}

// A traced program that writes far more events than the file-size limit allows, prints its
// result and exits with status 3.
void traced_program_on_full_disk(const std::string& dir, const std::string& format,
                                 rlim_t limit = 256 * 1024, int rounds = 20) {
  limit_file_size(limit);
  long sum = 0;
  {
    grain::runtime rt(
        {"--grain:threads=2", "--grain:trace=" + dir, "--grain:trace-format=" + format}, false);
    for (int i = 0; i < rounds; ++i) sum += grain::async([] { return fib(16); }).get();
  }
  std::printf("program output: %ld\n", sum);
  std::fflush(stdout);
  ::_exit(3);
}

TEST(TraceFullDisk, Otf2StopsTracingOnceAndTheProgramFinishes) {
  temp_path dir("fulldisk-otf2");
  const fs::path log = fs::temp_directory_path() / ("grain-fulldisk-" + std::to_string(::getpid()));
  const int st = in_child(log, [&] { traced_program_on_full_disk(dir.str(), "otf2"); });
  const std::string out = slurp(log);
  fs::remove(log);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 3) << status_text(st) << "\n" << out;
  EXPECT_NE(out.find("program output: 19740"), std::string::npos) << out;
  EXPECT_EQ(count(out, "cannot write"), 1u) << out;
  EXPECT_EQ(out.find("[OTF2]"), std::string::npos) << "OTF2's own messages leaked:\n" << out;
  // What was written is there, but under a name no viewer takes for a complete trace.
  EXPECT_FALSE(fs::exists(dir / "traces.otf2"));
  EXPECT_TRUE(fs::exists(dir / "traces.incomplete") || fs::exists(dir / "traces.otf2.incomplete"))
      << out;
}

TEST(TraceFullDisk, Otf2FailingWhileRecording) {
  // OTF2 writes a location's events once its 8 MiB of buffers are full: over 300 k tasks per
  // worker make the first write fail while tasks still run, not at the end.
  temp_path dir("fulldisk-otf2-run");
  const fs::path log = fs::temp_directory_path() / ("grain-fulldisk-" + std::to_string(::getpid()));
  const int st =
      in_child(log, [&] { traced_program_on_full_disk(dir.str(), "otf2", 1024 * 1024, 400); });
  const std::string out = slurp(log);
  fs::remove(log);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 3) << status_text(st) << "\n" << out;
  EXPECT_NE(out.find("program output: 394800"), std::string::npos) << out;
  EXPECT_EQ(count(out, "cannot write"), 1u) << out;
  EXPECT_EQ(out.find("[OTF2]"), std::string::npos) << "OTF2's own messages leaked:\n" << out;
  EXPECT_FALSE(fs::exists(dir / "traces.otf2"));
  EXPECT_TRUE(fs::exists(dir / "traces.incomplete")) << out;
}

TEST(TraceFullDisk, ChromeJsonIsNamedIncomplete) {
  temp_path dir("fulldisk-json");
  const fs::path log = fs::temp_directory_path() / ("grain-fulldisk-" + std::to_string(::getpid()));
  const int st = in_child(log, [&] { traced_program_on_full_disk(dir.str(), "chrome"); });
  const std::string out = slurp(log);
  fs::remove(log);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 3) << status_text(st) << "\n" << out;
  EXPECT_NE(out.find("program output: 19740"), std::string::npos) << out;
  EXPECT_EQ(count(out, "cannot write"), 1u) << out;
  EXPECT_FALSE(fs::exists(dir / "trace.json")) << "a truncated trace.json was left";
  EXPECT_TRUE(fs::exists(dir / "trace.json.incomplete")) << out;
}

TEST(TraceFullDisk, PerfettoProtobufIsNamedIncomplete) {
  temp_path dir("fulldisk-pftrace");
  const fs::path log = fs::temp_directory_path() / ("grain-fulldisk-" + std::to_string(::getpid()));
  const int st = in_child(log, [&] { traced_program_on_full_disk(dir.str(), "perfetto"); });
  const std::string out = slurp(log);
  fs::remove(log);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 3) << status_text(st) << "\n" << out;
  EXPECT_NE(out.find("program output: 19740"), std::string::npos) << out;
  EXPECT_EQ(count(out, "cannot write"), 1u) << out;
  EXPECT_FALSE(fs::exists(dir / "trace.pftrace")) << "a truncated trace.pftrace was left";
  EXPECT_TRUE(fs::exists(dir / "trace.pftrace.incomplete")) << out;
}

// ---- a crash in a task keeps what was recorded ---------------------------------------------

void crash_in_a_task(const std::string& dir, void (*crash)()) {
  grain::runtime rt({"--grain:threads=2", "--grain:trace=" + dir}, false);
  for (int i = 0; i < 4; ++i) grain::async([] { return fib(12); }).get();
  grain::async(grain::launch::async, crash).get();
  std::this_thread::sleep_for(std::chrono::seconds(30));  // the crash ends us first
}

void expect_readable_trace_up_to_the_crash(const temp_path& dir, const std::string& out) {
  const std::string anchor = (dir / "traces.otf2").string();
  ASSERT_TRUE(fs::exists(anchor)) << "no archive after the crash:\n" << out;
  expect_otf2_print_accepts(anchor);
  auto f = check_trace(read_otf2(anchor));
  EXPECT_GE(f.task_enters, 4 * 233u) << "the tasks before the crash are missing";  // fib(12)
}

TEST(TraceCrash, AbortInATaskLeavesAReadableArchive) {
  temp_path dir("crash-abort");
  const fs::path log = fs::temp_directory_path() / ("grain-crash-" + std::to_string(::getpid()));
  const int st = in_child(log, [&] { crash_in_a_task(dir.str(), [] { std::abort(); }); });
  const std::string out = slurp(log);
  fs::remove(log);
  ASSERT_TRUE(WIFSIGNALED(st)) << status_text(st) << "\n" << out;
  EXPECT_EQ(WTERMSIG(st), SIGABRT);
  expect_readable_trace_up_to_the_crash(dir, out);
}

int* volatile g_null = nullptr;

// A real fault even in the sanitizer builds (UBSan would stop at the null store first).
[[gnu::no_sanitize("undefined")]] void store_through_null() {
  *g_null = 1;
}

TEST(TraceCrash, NullDereferenceInATaskLeavesAReadableArchive) {
  temp_path dir("crash-segv");
  const fs::path log = fs::temp_directory_path() / ("grain-crash-" + std::to_string(::getpid()));
  const int st = in_child(log, [&] { crash_in_a_task(dir.str(), store_through_null); });
  const std::string out = slurp(log);
  fs::remove(log);
  ASSERT_TRUE(WIFSIGNALED(st)) << status_text(st) << "\n" << out;
#ifdef __SANITIZE_ADDRESS__
  // The handler before ours is ASan's: it reports the SEGV and aborts (abort_on_error=1).
  EXPECT_TRUE(WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGABRT) << status_text(st);
#else
  EXPECT_EQ(WTERMSIG(st), SIGSEGV);
#endif
  expect_readable_trace_up_to_the_crash(dir, out);
}

// ---- SIGINT inherited as ignored -------------------------------------------------------------

TEST(TraceSignals, IgnoredSigintDoesNotStopTheTrace) {
  temp_path dir("sigign");
  const fs::path log = fs::temp_directory_path() / ("grain-sigign-" + std::to_string(::getpid()));
  const int st = in_child(log, [&] {
    ::signal(SIGINT, SIG_IGN);  // a background job of a non-interactive shell
    grain::runtime rt({"--grain:threads=2", "--grain:trace=" + dir.str()}, false);
    ::kill(::getpid(), SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int i = 0; i < 4; ++i) grain::async([] { return fib(12); }).get();
    rt.stop();
    ::_exit(5);
  });
  const std::string out = slurp(log);
  fs::remove(log);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 5) << status_text(st) << "\n" << out;
  EXPECT_EQ(out.find("before exiting"), std::string::npos) << out;
  const std::string anchor = (dir / "traces.otf2").string();
  auto f = check_trace(read_otf2(anchor));
  EXPECT_GE(f.task_enters, 4 * 233u) << "the tasks after the ignored SIGINT were not traced";
}

// ---- start-up checks and what identifies the run ---------------------------------------------

TEST(TraceOptions, AFileIsNotTakenForAnExistingDirectory) {
  temp_path dir("file");
  fs::create_directories(dir.str());
  const std::string file = (dir / "plain-file").string();
  std::ofstream(file) << "x";
  for (const std::string& path : {file, std::string("/dev/null")}) {
    for (bool overwrite : {false, true}) {
      std::vector<std::string> args = {"--grain:threads=1", "--grain:trace=" + path};
      if (overwrite) args.push_back("--grain:trace-overwrite");
      try {
        grain::runtime rt(args, false);
        ADD_FAILURE() << path << " accepted as a trace directory";
      } catch (const grain::option_error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(msg.find("the directory exists"), std::string::npos) << msg;
        EXPECT_NE(msg.find("not a directory") == std::string::npos ? msg.find("a file")
                                                                   : msg.find("not a directory"),
                  std::string::npos)
            << msg;
      }
    }
  }
  EXPECT_EQ(slurp(file), "x");  // untouched
}

TEST(TraceOptions, ArchiveNamesMachineVersionAndCommandLine) {
  if (!have_command("otf2-print")) GTEST_SKIP() << "otf2-print not on PATH";
  temp_path dir("runinfo");
  {
    grain::runtime rt({"--grain:threads=1", "--grain:trace=" + dir.str()}, false);
    grain::async([] { return fib(5); }).get();
  }
  auto r = run_command("otf2-print -A '" + (dir / "traces.otf2").string() + "'");
  ASSERT_EQ(r.status, 0) << r.output;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_TRUE(contains(r.output, "Machine name") && contains(r.output, host)) << r.output;
  EXPECT_TRUE(contains(r.output, "GRAIN::VERSION")) << r.output;
  EXPECT_TRUE(contains(r.output, grain::options::version())) << r.output;
  EXPECT_TRUE(contains(r.output, "GRAIN::COMMAND_LINE")) << r.output;
  EXPECT_TRUE(contains(r.output, "grain_trace_tests")) << r.output;
  EXPECT_TRUE(contains(r.output, "GRAIN::START_TIME")) << r.output;
}

}  // namespace
}  // namespace grain::test
