// The trace and the counters agree under any load (issue 11, item 16): the task Enters of the
// trace (re-entries of inline parents excluded) equal the run summary's
// /threads{locality#0/total}/count/cumulative-phases — the summary the user reads, taken from
// the sampler's final snapshot — also while other threads keep both cores busy.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "grain/grain.hpp"
#include "grain/instrumentation/trace_reader.hpp"
#include "trace_util.hpp"

namespace grain::test {
namespace {

// The number after "NAME": in the summary JSON.
double summary_value(const std::string& file, const std::string& name) {
  const std::string text = slurp(file);
  const std::string key = "\"" + name + "\":";
  auto at = text.find(key);
  if (at == std::string::npos) return -1;
  at += key.size();
  while (at < text.size() && (text[at] == ' ' || text[at] == '{')) ++at;
  if (text.compare(at, 8, "\"value\":") == 0) at += 8;
  return std::stod(text.substr(at, 32));
}

// Threads that keep every core busy for as long as they live (another busy process, in effect).
class busy_cores {
 public:
  busy_cores() {
    const unsigned n = std::max(2u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < n; ++i)
      threads_.emplace_back([this] {
        volatile unsigned long x = 0;
        while (!stop_.load(std::memory_order_relaxed)) x = x + 1;
      });
  }
  ~busy_cores() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

TEST(TraceCountsUnderLoad, TaskEntersEqualTheSummarysPhasesWhileCoresAreBusy) {
  busy_cores load;
  for (int run = 0; run < 5; ++run) {
    temp_path dir("load");
    std::filesystem::create_directories(dir / "");
    const std::string summary = (dir / "summary.json").string();
    {
      grain::runtime rt({"--grain:threads=2", "--grain:trace=" + (dir / "trace").string(),
                         "--grain:summary=" + summary},
                        false);
      EXPECT_EQ(grain::async([] { return fib(18); }).get(), 2584);
    }
    const auto t = instrumentation::read_otf2((dir / "trace" / "traces.otf2").string());
    const auto f = check_trace(t);
    const double phases =
        summary_value(summary, "/threads{locality#0/total}/count/cumulative-phases");
    ASSERT_GT(phases, 0) << "no phase count in " << summary;
    EXPECT_EQ(static_cast<double>(f.task_enters), phases) << "run " << run;
  }
}

}  // namespace
}  // namespace grain::test
