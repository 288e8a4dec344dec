// Outputs that cannot be written: --grain:print-counter-destination on a full disk (or past a
// file-size limit) says so once and stops, leaving FILE.incomplete, and the program finishes
// with its own status; --grain:save-calibration to a place it cannot write is refused at
// start-up, not found out at exit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/temp_files.hpp"
#include "grain/grain.hpp"
#include "grain/options.hpp"

namespace grain::test {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& tag) {
  return grain::test::fresh_dir("outfail", tag);
}

// Runs a one-worker program with `options` in a child process whose stdout and stderr go to
// `log`, under a file-size limit of `fsize` bytes (0: none); it prints "program output" and
// exits 3 after the runtime. Returns the wait status.
int run_child(const std::vector<std::string>& options, const fs::path& log, rlim_t fsize) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (std::FILE* f = std::freopen(log.c_str(), "w", stderr)) ::dup2(::fileno(f), 1);
    ::signal(SIGXFSZ, SIG_IGN);
    if (fsize > 0) {
      rlimit r{fsize, fsize};
      ::setrlimit(RLIMIT_FSIZE, &r);
    }
    {
      std::vector<std::string> args = {"--grain:threads=1"};
      args.insert(args.end(), options.begin(), options.end());
      grain::runtime rt(args, false);
      std::vector<grain::future<int>> fs;
      for (int i = 0; i < 2000; ++i) fs.push_back(grain::async([i] { return i; }));
      for (auto& f : fs) f.get();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // periodic prints
    }
    std::printf("program output\n");
    std::fflush(stdout);
    ::_exit(3);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return st;
}

const std::vector<std::string> every_counter_every_ms = {"--grain:print-counter=/threads{*}/*",
                                                         "--grain:print-counter-interval=1",
                                                         "--grain:sample-interval=1"};

// /dev/full: every write fails with ENOSPC. It used to stop silently after a buffer of 8 KiB.
TEST(PrintCounterFullDisk, DeviceFullSaysSoAndTheProgramFinishes) {
  const fs::path d = fresh_dir("devfull");
  auto opts = every_counter_every_ms;
  opts.push_back("--grain:print-counter-destination=/dev/full");
  const int st = run_child(opts, d / "log", 0);
  const std::string out = slurp(d / "log");
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 3) << st << "\n" << out;
  EXPECT_NE(out.find("program output"), std::string::npos) << out;
  EXPECT_NE(out.find("--grain:print-counter-destination=/dev/full: cannot write (No space left "
                     "on device); counter printing stops here"),
            std::string::npos)
      << out;
  // One message, not one per print.
  EXPECT_EQ(out.find("cannot write", out.find("cannot write") + 1), std::string::npos) << out;
  fs::remove_all(d);
}

// A regular file that cannot grow (a file-size limit, as a full disk): what was printed is kept
// as FILE.incomplete, and no truncated FILE is left under the complete one's name.
TEST(PrintCounterFullDisk, TruncatedFileIsNamedIncomplete) {
  const fs::path d = fresh_dir("fsize");
  const fs::path csv = d / "counters.csv";
  auto opts = every_counter_every_ms;
  opts.push_back("--grain:print-counter-destination=" + csv.string());
  const int st = run_child(opts, d / "log", 16 * 1024);
  const std::string out = slurp(d / "log");
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 3) << st << "\n" << out;
  EXPECT_NE(out.find("--grain:print-counter-destination=" + csv.string() + ": cannot write"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("what was printed is in " + csv.string() + ".incomplete"), std::string::npos)
      << out;
  EXPECT_FALSE(fs::exists(csv));
  ASSERT_TRUE(fs::exists(csv.string() + ".incomplete"));
  EXPECT_EQ(slurp(csv.string() + ".incomplete").rfind("time_s,counter,value\n", 0), 0u);
  fs::remove_all(d);
}

void expect_refused_at_start(const std::string& file, const std::string& says) {
  try {
    grain::runtime rt({"--grain:threads=1", "--grain:save-calibration=" + file}, false);
    ADD_FAILURE() << "--grain:save-calibration=" << file << " accepted at start-up";
  } catch (const grain::option_error& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

// It used to fail only at exit, after the whole run, with status 0.
TEST(SaveCalibration, UnwritablePathIsRefusedAtStart) {
  const fs::path d = fresh_dir("calibration");
  expect_refused_at_start((d / "missing-dir" / "cal.json").string(),
                          "--grain:save-calibration=" + (d / "missing-dir" / "cal.json").string() +
                              ": cannot write " + (d / "missing-dir" / "cal.json.tmp").string() +
                              " (No such file or directory)");
  expect_refused_at_start(d.string(), "is a directory");
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directories(d / "ro");
    fs::permissions(d / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    expect_refused_at_start((d / "ro" / "cal.json").string(), "Permission denied");
  }
  // Nothing left behind by the checks, and a writable path still works.
  EXPECT_FALSE(fs::exists(d / "cal.json.tmp"));
  {
    grain::runtime rt(
        {"--grain:threads=1", "--grain:save-calibration=" + (d / "cal.json").string()}, false);
    grain::async([] { return 1; }).get();
  }
  EXPECT_TRUE(fs::exists(d / "cal.json"));
  EXPECT_FALSE(fs::exists(d / "cal.json.tmp"));
  fs::permissions(d, fs::perms::owner_all, fs::perm_options::add);
  fs::remove_all(d);
}

}  // namespace
}  // namespace grain::test
