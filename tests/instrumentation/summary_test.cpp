// The run summary's start-up check (a path that cannot be written is an option error, not a
// message at exit), what identifies the run in it, and a full disk at exit (RLIMIT_FSIZE in a
// child process: writes fail with EFBIG, as on a full disk, for any user).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/temp_files.hpp"
#include "grain/grain.hpp"
#include "grain/options.hpp"

namespace grain::test {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& tag) {
  return grain::test::fresh_dir("summary", tag);
}

void expect_option_error(const std::string& summary, const std::string& says) {
  try {
    grain::runtime rt({"--grain:threads=1", "--grain:summary=" + summary}, false);
    ADD_FAILURE() << "--grain:summary=" << summary << " accepted at start-up";
  } catch (const grain::option_error& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(SummaryStartup, UnwritablePathIsAnOptionError) {
  const fs::path d = fresh_dir("startup");
  expect_option_error((d / "no-such-dir" / "s.json").string(), "No such file or directory");
  expect_option_error(d.string(), "is a directory");
  // Nothing is left behind by the check.
  EXPECT_TRUE(fs::is_empty(d));
  {
    grain::runtime rt({"--grain:threads=1", "--grain:summary=" + (d / "ok.json").string()}, false);
    EXPECT_FALSE(fs::exists(d / "ok.json.incomplete"));
  }
  EXPECT_TRUE(fs::exists(d / "ok.json"));
  fs::remove_all(d);
}

// scripts/demo's way: the summary goes into the trace directory, which does not exist before the
// run (the trace refuses one that does). The check waits until the trace has made it; a summary
// in a missing directory that no one makes is still an option error.
TEST(SummaryStartup, IntoTheTraceDirectoryTheRunCreates) {
  const fs::path d = fresh_dir("into-trace");
  for (const std::string slash : {"", "/"}) {
    const fs::path trace = d / ("trace" + std::to_string(slash.size()));
    {
      grain::runtime rt({"--grain:threads=1", "--grain:trace=" + trace.string() + slash,
                         "--grain:summary=" + (trace / "summary.json").string()},
                        false);
      EXPECT_EQ(grain::async([] { return 7; }).get(), 7);
    }
    EXPECT_TRUE(fs::exists(trace / "summary.json")) << trace;
#ifdef GRAIN_TEST_WITHOUT_OTF2
    EXPECT_TRUE(fs::exists(trace / "trace.pftrace")) << trace;  // the default without OTF2
#else
    EXPECT_TRUE(fs::exists(trace / "traces.otf2")) << trace;
#endif
  }
  // A directory beside the trace's, or below it, is made by no one.
  const fs::path other = d / "trace-other";
  try {
    grain::runtime rt({"--grain:threads=1", "--grain:trace=" + other.string(),
                       "--grain:summary=" + (other / "sub" / "s.json").string()},
                      false);
    ADD_FAILURE() << "a summary below the trace directory was accepted";
  } catch (const grain::option_error& e) {
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(other)) << "the refused run left its trace directory behind";
  fs::remove_all(d);
}

TEST(SummaryRunInfo, VersionCommandLineHostAndStartTime) {
  const fs::path d = fresh_dir("runinfo");
  const std::string json = (d / "s.json").string();
  { grain::runtime rt({"--grain:threads=1", "--grain:summary=" + json}, false); }
  const std::string text = slurp(json);
  EXPECT_NE(text.find(std::string("\"grain_version\": \"") + grain::options::version() + "\""),
            std::string::npos)
      << text.substr(0, 600);
  EXPECT_NE(text.find("\"command_line\": [\""), std::string::npos) << text.substr(0, 600);
  EXPECT_NE(text.find("grain_instrumentation_tests"), std::string::npos) << text.substr(0, 600);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_NE(text.find(std::string("\"host\": \"") + host + "\""), std::string::npos)
      << text.substr(0, 600);
  EXPECT_NE(text.find("\"start_time\": \"20"), std::string::npos) << text.substr(0, 600);
  fs::remove_all(d);
}

TEST(SummaryFullDisk, IncompleteSummaryIsNamedSoAndTheProgramFinishes) {
  const fs::path d = fresh_dir("fulldisk");
  const std::string json = (d / "s.json").string();
  const fs::path log = d / "log";
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (std::FILE* f = std::freopen(log.c_str(), "w", stderr)) ::dup2(::fileno(f), 1);
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit r{2048, 2048};  // the summary (every counter) is far larger
    ::setrlimit(RLIMIT_FSIZE, &r);
    { grain::runtime rt({"--grain:threads=1", "--grain:summary=" + json}, false); }
    std::printf("program output\n");
    std::fflush(stdout);
    ::_exit(3);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  const std::string out = slurp(log);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 3) << st << "\n" << out;
  EXPECT_NE(out.find("program output"), std::string::npos) << out;
  EXPECT_NE(out.find("--grain:summary=" + json), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(json)) << "a truncated summary carries the complete one's name";
  EXPECT_TRUE(fs::exists(json + ".incomplete")) << out;
  fs::remove_all(d);
}

}  // namespace
}  // namespace grain::test
