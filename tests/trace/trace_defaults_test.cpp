// The counters a trace records by default (docs/tracing.md, "Recording"): a small set, and
// every counter with --grain:trace-counters=all.
#include <set>
#include <string>

#include "grain/runtime.hpp"
#include "trace_util.hpp"

namespace grain::test {
namespace {

using grain::instrumentation::otf2_event;
using grain::instrumentation::read_otf2;

std::set<std::string> recorded_counters(const std::vector<std::string>& extra) {
  temp_path dir("defaults");
  {
    std::vector<std::string> args = {"--grain:threads=2", "--grain:trace=" + dir.str()};
    args.insert(args.end(), extra.begin(), extra.end());
    grain::runtime rt(args, false);
    EXPECT_EQ(grain::async([] { return fib(12); }).get(), 144);
  }
  auto t = read_otf2((dir / "traces.otf2").string());
  std::set<std::string> names;
  if (const auto* m = t.location("runtime counters"))
    for (auto& e : m->events)
      if (e.type == otf2_event::kind::metric && e.name.rfind("knob:", 0) != 0)
        names.insert(e.name);  // (the knobs' values are on this location too)
  return names;
}

TEST(TraceDefaults, SmallDocumentedSetUnlessAllAsked) {
  const std::set<std::string> expected = {
      "/threads{locality#0/total}/idle-rate",
      "/threads{locality#0/total}/time/average",
      "/threads{locality#0/total}/time/average-overhead",
      "/threads{locality#0/total}/queue-length/pending",
      "/threads{locality#0/total}/queue-length/staged",
      "/threads{locality#0/total}/count/cumulative",
      "/threads{locality#0/total}/time/cumulative",
      "/threads{locality#0/total}/time/overall",
  };
  EXPECT_EQ(recorded_counters({}), expected);
  const auto all = recorded_counters({"--grain:trace-counters=all"});
  EXPECT_GT(all.size(), 3 * expected.size());
  for (auto& n : expected) EXPECT_TRUE(all.count(n)) << n;
  // A per-worker counter that always has a value (a worker's idle rate has none in a sample
  // where the loaded machine gave it no time: 12 of 30 runs under load missed it).
  EXPECT_TRUE(all.count("/threads{locality#0/pool#default/worker#0}/count/cumulative"));
}

}  // namespace
}  // namespace grain::test
