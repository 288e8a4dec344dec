// The Perfetto JSON is streamed: events reach DIR/trace.json.incomplete while the program
// runs (a converter thread takes the workers' published chunks), not only at the end.
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "grain/runtime.hpp"
#include "trace_util.hpp"

namespace grain::test {
namespace {

TEST(TracePerfetto, EventsAreWrittenWhileTheProgramRuns) {
  temp_path dir("perfetto-stream");
  const fs::path writing = dir / "trace.json.incomplete";
  std::uintmax_t during = 0;
  {
    grain::runtime rt(
        {"--grain:threads=2", "--grain:trace=" + dir.str(), "--grain:trace-format=chrome"}, false);
    // fib(25): 121,393 tasks, about 240,000 words of records: several full 32,766-word chunks
    // per worker.
    EXPECT_EQ(grain::async([] { return fib(25); }).get(), 75025);
    std::error_code ec;
    for (int i = 0; i < 500 && during < 200000; ++i) {
      during = fs::file_size(writing, ec);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GT(during, 200000u) << "no task slices written before the end of the run";
    EXPECT_FALSE(fs::exists(dir / "trace.json"));  // named only once complete
  }
  ASSERT_TRUE(fs::exists(dir / "trace.json"));
  EXPECT_GT(fs::file_size(dir / "trace.json"), during);
  if (!have_command("python3")) return;
  auto r = run_command(
      "python3 -c \"import json,sys; d=json.load(open(sys.argv[1])); "
      "x=[e for e in d['traceEvents'] if e['ph']=='X' and e['cat']=='task']; "
      "print('slices', len(x))\" '" +
      (dir / "trace.json").string() + "'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("slices "), std::string::npos) << r.output;
  const auto n = std::stol(r.output.substr(r.output.find("slices ") + 7));
  EXPECT_GE(n, 121393) << r.output;
}

}  // namespace
}  // namespace grain::test
