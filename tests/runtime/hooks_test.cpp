// hook_chain: tools that share the one hook table by chaining, installed and removed in any
// order, never calling a hook twice or in a loop.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grain/ext/hooks.hpp"

namespace grain::test {
namespace {

std::vector<std::string> g_calls;  // who ran, in order
int g_depth = 0;                   // a loop shows as calls, not as a stack overflow

// A tool like the trace or PAPI: its hooks call the previous ones first, then do their own
// work while `active` (its session) is set.
template <int N>
struct tool {
  static inline bool active = true;
  static void worker_start(unsigned w);
  static void phase_begin(unsigned w, const task_info& t, std::uint64_t ts);
  static inline hook_chain chain{
      runtime_hooks{.phase_begin = &phase_begin, .worker_start = &worker_start}};
};

template <int N>
void tool<N>::worker_start(unsigned w) {
  if (++g_depth > 8) return;
  if (auto p = chain.prev(&grain::runtime_hooks::worker_start)) p(w);
  if (active) g_calls.push_back("start" + std::to_string(N));
  --g_depth;
}

template <int N>
void tool<N>::phase_begin(unsigned w, const task_info& t, std::uint64_t ts) {
  if (++g_depth > 8) return;
  if (auto p = chain.prev(&grain::runtime_hooks::phase_begin)) p(w, t, ts);
  if (active) g_calls.push_back("begin" + std::to_string(N));
  --g_depth;
}

void bottom_start(unsigned) {
  g_calls.push_back("bottom");
}

// Runs the table's hooks as a worker would; returns who ran.
std::vector<std::string> call_table() {
  g_calls.clear();
  g_depth = 0;
  const task_info t{1, 0, "t"};
  if (auto h = hooks().worker_start) h(0);
  if (auto h = hooks().phase_begin) h(0, t, 0);
  return g_calls;
}

using calls = std::vector<std::string>;

class HookChain : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = hooks();
    hooks() = {};
    hooks().worker_start = &bottom_start;  // what the table held before the tools
  }
  void TearDown() override { hooks() = saved_; }
  runtime_hooks saved_;
};

TEST_F(HookChain, TwoToolsChainedAreBothCalledInOrder) {
  tool<1>::chain.install();
  tool<2>::chain.install();
  EXPECT_EQ(call_table(), (calls{"bottom", "start1", "start2", "begin1", "begin2"}));
  EXPECT_TRUE(tool<2>::chain.uninstall());
  EXPECT_TRUE(tool<1>::chain.uninstall());
}

TEST_F(HookChain, UninstallInReverseOrderRestoresTheTable) {
  tool<3>::chain.install();
  tool<4>::chain.install();
  EXPECT_TRUE(tool<4>::chain.uninstall());
  EXPECT_EQ(hooks().worker_start, &tool<3>::worker_start);
  EXPECT_EQ(call_table(), (calls{"bottom", "start3", "begin3"}));
  EXPECT_TRUE(tool<3>::chain.uninstall());
  EXPECT_EQ(hooks().worker_start, &bottom_start);
  EXPECT_EQ(hooks().phase_begin, nullptr);
  EXPECT_EQ(call_table(), (calls{"bottom"}));
}

TEST_F(HookChain, UninstallInInstallOrderLeavesTheFirstInertInTheChain) {
  tool<5>::chain.install();
  tool<6>::chain.install();
  // Tool 6 calls tool 5's functions: they must stay where they are.
  EXPECT_FALSE(tool<5>::chain.uninstall());
  EXPECT_TRUE(tool<5>::chain.installed());
  tool<5>::active = false;  // its session ended
  EXPECT_EQ(call_table(), (calls{"bottom", "start6", "begin6"}));
  EXPECT_TRUE(tool<6>::chain.uninstall());
  EXPECT_EQ(hooks().worker_start, &tool<5>::worker_start);
  EXPECT_EQ(call_table(), (calls{"bottom"}));
  // Now it is in front again and can leave.
  EXPECT_TRUE(tool<5>::chain.uninstall());
  EXPECT_EQ(hooks().worker_start, &bottom_start);
  EXPECT_EQ(hooks().phase_begin, nullptr);
  tool<5>::active = true;
}

TEST_F(HookChain, InstallingTwiceIsANoOp) {
  tool<7>::chain.install();
  tool<7>::chain.install();
  EXPECT_EQ(call_table(), (calls{"bottom", "start7", "begin7"}));
  EXPECT_TRUE(tool<7>::chain.uninstall());
  EXPECT_EQ(hooks().worker_start, &bottom_start);
  EXPECT_TRUE(tool<7>::chain.uninstall()) << "not installed: nothing to do";
}

TEST_F(HookChain, ReinstallingBehindAnotherToolDoesNotLoop) {
  tool<8>::chain.install();
  tool<9>::chain.install();
  EXPECT_FALSE(tool<8>::chain.uninstall());
  // Tool 8's next session: its functions are still in the chain, behind tool 9. Putting them in
  // front again would make tool 8 call tool 9 call tool 8 ...
  tool<8>::chain.install();
  EXPECT_EQ(call_table(), (calls{"bottom", "start8", "start9", "begin8", "begin9"}));
  EXPECT_TRUE(tool<9>::chain.uninstall());
  EXPECT_TRUE(tool<8>::chain.uninstall());
  EXPECT_EQ(hooks().worker_start, &bottom_start);
}

TEST_F(HookChain, ATableThatAlreadyHoldsOursDoesNotMakeThemCallThemselves) {
  // Someone saved the table while tool 10 was installed and puts it back after tool 10 left
  // (papi_test does this around its runtimes): tool 10's functions are in the table, tool 10 is
  // not installed, and its next install must not take its own functions as the previous ones.
  tool<10>::chain.install();
  const runtime_hooks copy = hooks();
  EXPECT_TRUE(tool<10>::chain.uninstall());
  hooks() = copy;
  tool<10>::chain.install();
  EXPECT_EQ(call_table(), (calls{"bottom", "start10", "begin10"}));
  EXPECT_TRUE(tool<10>::chain.uninstall());
  EXPECT_EQ(hooks().worker_start, &bottom_start);
}

}  // namespace
}  // namespace grain::test
