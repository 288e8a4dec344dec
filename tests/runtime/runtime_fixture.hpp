#pragma once
// A runtime per test (only one may run in a process at a time), the core suites' run at 1, 2
// and 4 workers, and the check at teardown that every pooled object a test took went back.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grain/detail/pool_accounting.hpp"
#include "grain/ext/runtime_core.hpp"

namespace grain::test {

// Polls until pred holds; the bound only keeps a broken build from hanging.
template <class Pred>
bool eventually(Pred pred) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

inline std::unique_ptr<runtime_core> start_runtime(std::vector<std::string> args = {
                                                       "--grain:threads=2"}) {
  return std::make_unique<runtime_core>(args, std::vector<std::unique_ptr<extension>>{}, false);
}

// What the runtime's pools have handed out and not taken back (grain/detail/pool_accounting.hpp):
// in use, not cached, so blocks kept in free lists after a runtime stopped do not count.
struct pooled_in_use {
  std::int64_t small_blocks = 0;  // task objects and shared states
  std::int64_t fibers = 0;        // suspended user threads, each with its stack
};

inline pooled_in_use pooled_now() {
  return {detail::small_blocks_in_use(), detail::fibers_in_use()};
}

// Empty when everything taken since `before` went back; else what did not.
inline std::string pooled_leaks(const pooled_in_use& before) {
  const pooled_in_use now = pooled_now();
  std::string leaks;
  if (now.small_blocks != before.small_blocks)
    leaks += std::to_string(now.small_blocks - before.small_blocks) +
             " pooled task objects or shared states not given back; ";
  if (now.fibers != before.fibers)
    leaks += std::to_string(now.fibers - before.fibers) +
             " user threads (fibers with their stacks) still suspended; ";
  return leaks;
}

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    before_ = pooled_now();
    rt = start_runtime(args());
  }
  void TearDown() override {
    rt.reset();
    const std::string leaks = pooled_leaks(before_);
    EXPECT_TRUE(leaks.empty()) << "after the runtime stopped: " << leaks;
  }
  virtual std::vector<std::string> args() const { return {"--grain:threads=2"}; }
  std::unique_ptr<runtime_core> rt;

 private:
  pooled_in_use before_;
};

// The core suites (futures, async, when_all, dataflow, LCOs, suspension) run once per worker
// count: 1 (no thief: every wait must suspend or run inline), 2, and 4 (more workers than this
// machine may have cores: preemption in the middle of any hand-over). Instantiate with
//   INSTANTIATE_TEST_SUITE_P(Workers, Suite, grain::test::worker_counts(),
//                            grain::test::worker_count_name);
class WorkersTest : public RuntimeTest, public ::testing::WithParamInterface<unsigned> {
 protected:
  std::vector<std::string> args() const override {
    return {"--grain:threads=" + std::to_string(GetParam()), "--grain:oversubscribe"};
  }
};

inline auto worker_counts() {
  return ::testing::Values(1u, 2u, 4u);
}

inline std::string worker_count_name(const ::testing::TestParamInfo<unsigned>& info) {
  return std::to_string(info.param) + "workers";
}

}  // namespace grain::test
