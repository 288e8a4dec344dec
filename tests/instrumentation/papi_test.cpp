// PAPI: the unavailable path (this VM has no hardware counters: one warning, counters report
// unavailable) and the available path with a PAPI Software Defined Event (SDE) that this test
// program defines itself, so PAPI has an event it can really count here.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <papi.h>
#include <sde_lib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "grain/grain.hpp"
#include "grain/hooks.hpp"
#include "grain/instrumentation/counters.hpp"

namespace gi = grain::instrumentation;
using namespace std::chrono_literals;

void check_sde_counters();

namespace {

long long g_ticks = 0;  // the SDE counter sde:::grain_test::ticks reads this variable
bool g_sde_ok = false;

// PAPI's SDE component finds the SDE library when PAPI initialises: load and register it
// before any test starts the runtime (PAPI is initialised once per process).
class sde_environment : public ::testing::Environment {
 public:
  void SetUp() override {
    void* h = dlopen("libsde.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) return;
    using init_t = papi_handle_t (*)(const char*);
    using reg_t = int (*)(papi_handle_t, const char*, int, int, void*);
    auto init = reinterpret_cast<init_t>(dlsym(h, "papi_sde_init"));
    auto reg = reinterpret_cast<reg_t>(dlsym(h, "papi_sde_register_counter"));
    if (!init || !reg) return;
    papi_handle_t ph = init("grain_test");
    g_sde_ok =
        reg(ph, "ticks", PAPI_SDE_RO | PAPI_SDE_DELTA, PAPI_SDE_long_long, &g_ticks) == PAPI_OK;
  }
};
const auto* g_env = ::testing::AddGlobalTestEnvironment(new sde_environment);

int count_occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(Papi, HardwareEventUnavailableHereWarnsOnceAndReportsUnavailable) {
  // Which path applies depends on the machine: PAPI_TOT_INS is countable on bare metal.
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  {
    grain::runtime rt({"--grain:threads=2", "--grain:papi=PAPI_TOT_INS,NOT_AN_EVENT"}, false);
    std::vector<grain::future<int>> fs;
    for (int i = 0; i < 100; ++i) fs.push_back(grain::async([i] { return i * i; }));
    for (auto& f : fs) f.get();
    auto unknown = gi::registry().value("/papi{locality#0/pool#default/worker#0}/NOT_AN_EVENT");
    ASSERT_TRUE(unknown);
    EXPECT_FALSE(unknown->available);
    auto ins = gi::registry().value("/papi{locality#0/pool#default/worker#1}/PAPI_TOT_INS");
    ASSERT_TRUE(ins);
    auto total = gi::registry().value("/papi{locality#0/total}/PAPI_TOT_INS");
    ASSERT_TRUE(total);
    auto listed = gi::registry().list("/papi{*}/PAPI_TOT_INS");
    ASSERT_EQ(listed.size(), 3u);
    if (!ins->available) {
      EXPECT_FALSE(total->available);
      EXPECT_EQ(ins->value, 0);
      EXPECT_NE(listed[0].description.find("unavailable"), std::string::npos)
          << listed[0].description;
    } else {
      EXPECT_GT(total->value, 0) << "hardware counters present: PAPI_TOT_INS must count";
    }
  }
  const std::string out =
      ::testing::internal::GetCapturedStdout() + ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_occurrences(out, "PAPI event NOT_AN_EVENT is unavailable"), 1) << out;
  if (PAPI_num_cmp_hwctrs(0) <= 0) {
    EXPECT_EQ(count_occurrences(out, "PAPI event PAPI_TOT_INS is unavailable"), 1) << out;
    EXPECT_NE(out.find("hardware counters"), std::string::npos) << out;
  }
}

std::atomic<int> g_other_tool_starts{0};
void other_tool_worker_start(unsigned) {
  g_other_tool_starts++;
}

TEST(Papi, SoftwareDefinedEventIsCountedPerWorker) {
  ASSERT_TRUE(g_sde_ok) << "libsde could not be loaded: the available path is not testable";
  // Another tool (the tracer) already uses the worker_start hook: PAPI chains onto it.
  const grain::runtime_hooks saved = grain::hooks();
  grain::hooks().worker_start = other_tool_worker_start;
  {
    grain::runtime rt({"--grain:threads=2", "--grain:papi=sde:::grain_test::ticks"}, false);
    check_sde_counters();
  }
  EXPECT_EQ(g_other_tool_starts.load(), 2) << "the previous worker_start hook still runs";
  grain::hooks() = saved;
}

void check_sde_counters() {
  // Every worker adds and starts its own event set on its own thread when it starts: wait
  // until all have (the total is available only then).
  for (int i = 0; i < 2000; ++i) {
    auto t = gi::registry().value("/papi{locality#0/total}/sde:::grain_test::ticks");
    if (t && t->available) break;
    std::this_thread::sleep_for(1ms);
  }
  grain::counters::reset();
  g_ticks += 42;
  for (unsigned w = 0; w < 2; ++w) {
    auto v = gi::registry().value("/papi{locality#0/pool#default/worker#" + std::to_string(w) +
                                  "}/sde:::grain_test::ticks");
    ASSERT_TRUE(v);
    EXPECT_TRUE(v->available) << v->name;
    // An SDE counter is process-wide: each worker's event set sees the same 42 new ticks.
    EXPECT_EQ(v->value, 42) << v->name;
  }
  auto total = gi::registry().value("/papi/sde:::grain_test::ticks");
  ASSERT_TRUE(total);
  EXPECT_TRUE(total->available);
  EXPECT_EQ(total->value, 84);
}

TEST(Papi, EventListIsRequired) {
  EXPECT_THROW(grain::runtime({"--grain:threads=1", "--grain:papi=,"}, false), grain::option_error);
}
