// PAPI: a hardware event takes the path this machine allows (counted, or one warning and
// counters that report unavailable with the reason), an unknown event always takes the
// unavailable path, and a PAPI Software Defined Event (SDE) that this test program defines
// itself always takes the available path, whatever the hardware.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <papi.h>
#include <sde_lib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "grain/ext/hooks.hpp"
#include "grain/grain.hpp"
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

// PAPI asked directly, on this thread: can it add, start and read the event? Machines differ
// (Intel or AMD, bare metal or a VM with all, some or none of the counters), so this decides
// which path the test expects; it never decides what grain reports.
bool papi_can_count(const char* name) {
  int code = PAPI_NULL;
  if (PAPI_event_name_to_code(name, &code) != PAPI_OK) return false;
  int es = PAPI_NULL;
  if (PAPI_create_eventset(&es) != PAPI_OK) return false;
  long long v = 0;
  bool ok = PAPI_add_event(es, code) == PAPI_OK && PAPI_start(es) == PAPI_OK;
  if (ok) {
    ok = PAPI_read(es, &v) == PAPI_OK;
    PAPI_stop(es, &v);
  }
  PAPI_cleanup_eventset(es);
  PAPI_destroy_eventset(&es);
  return ok;
}

void run_some_tasks() {
  std::vector<grain::future<long>> fs;
  for (long i = 0; i < 100; ++i) fs.push_back(grain::async([i] { return i * i; }));
  for (auto& f : fs) f.get();
}

}  // namespace

TEST(Papi, HardwareEventCountsWhereThisMachineCanElseReportsUnavailableWithReason) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  bool countable = false;
  {
    grain::runtime rt({"--grain:threads=2", "--grain:papi=PAPI_TOT_INS,NOT_AN_EVENT"}, false);
    // grain initialised PAPI; where that failed, every reason is the failure instead.
    const bool papi_up = PAPI_is_initialized() != PAPI_NOT_INITED;
    countable = papi_up && papi_can_count("PAPI_TOT_INS");
    auto unknown = gi::registry().list("/papi{*}/NOT_AN_EVENT");
    ASSERT_EQ(unknown.size(), 3u);
    for (const auto& c : unknown) {
      EXPECT_NE(c.description.find(papi_up ? "unavailable: PAPI does not know this event"
                                           : "unavailable: PAPI"),
                std::string::npos)
          << c.description;
      auto v = gi::registry().value(c.name);
      ASSERT_TRUE(v);
      EXPECT_FALSE(v->available) << c.name;
    }
    auto listed = gi::registry().list("/papi{*}/PAPI_TOT_INS");
    ASSERT_EQ(listed.size(), 3u);
    if (!countable) {
      run_some_tasks();
      for (const auto& c : listed) {
        EXPECT_NE(c.description.find("unavailable: "), std::string::npos) << c.description;
        if (papi_up) {
          EXPECT_NE(c.description.find("hardware counters"), std::string::npos) << c.description;
        }
        auto v = gi::registry().value(c.name);
        ASSERT_TRUE(v);
        EXPECT_FALSE(v->available) << c.name;
        EXPECT_EQ(v->value, 0) << c.name;
      }
    } else {
      // Each worker adds and starts its event set on its own thread when it starts.
      const std::string total = "/papi{locality#0/total}/PAPI_TOT_INS";
      for (int i = 0; i < 30000; ++i) {
        auto t = gi::registry().value(total);
        if (t && t->available) break;
        std::this_thread::sleep_for(1ms);
      }
      run_some_tasks();
      for (const auto& c : listed) {
        EXPECT_EQ(c.description.find("unavailable"), std::string::npos) << c.description;
        auto v = gi::registry().value(c.name);
        ASSERT_TRUE(v);
        EXPECT_TRUE(v->available) << c.name;
      }
      auto t = gi::registry().value(total);
      ASSERT_TRUE(t);
      EXPECT_GT(t->value, 0) << "PAPI can count PAPI_TOT_INS here: the workers' sum must grow";
    }
  }
  const std::string out =
      ::testing::internal::GetCapturedStdout() + ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_occurrences(out, "PAPI event NOT_AN_EVENT is unavailable"), 1) << out;
  EXPECT_EQ(count_occurrences(out, "PAPI event PAPI_TOT_INS is unavailable"), countable ? 0 : 1)
      << out;
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
