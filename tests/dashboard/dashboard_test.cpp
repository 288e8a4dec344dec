// --grain:dashboard: the JSON endpoint changes while a program runs, the page is plots with
// nothing fetched from elsewhere, decisions arrive with their reason, and a dashboard that
// cannot start (port out of range or in use) leaves the program running without it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "grain/async.hpp"
#include "grain/dashboard/extension.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/knob.hpp"
#include "grain/runtime.hpp"

namespace {

using namespace std::chrono_literals;

// Keeps the workers busy with small tasks until destroyed.
class busy_program {
 public:
  busy_program()
      : th_([this] {
          while (!stop_) {
            std::vector<grain::future<int>> fs;
            for (int i = 0; i < 64; ++i)
              fs.push_back(grain::async([i] {
                volatile int x = 0;
                for (int k = 0; k < 2000; ++k) x = x + k * i;
                return static_cast<int>(x);
              }));
            for (auto& f : fs) f.get();
          }
        }) {}
  ~busy_program() {
    stop_ = true;
    th_.join();
  }
  busy_program(const busy_program&) = delete;
  busy_program& operator=(const busy_program&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread th_;
};

std::string get(int port, const std::string& path, int* status = nullptr) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(5, 0);
  auto r = c.Get(path);
  if (!r) return "";
  if (status) *status = r->status;
  return r->body;
}

// The last row's sequence number and the value of column `name` in it (-1 when absent).
struct last_row {
  long long seq = -1;
  double value = -1;
};

// The JSON is plain enough to read with a regex: columns in order, then rows of numbers.
last_row read_last(const std::string& json, const std::string& name) {
  last_row out;
  const auto cols_at = json.find("\"columns\":[");
  const auto rows_at = json.find("\"rows\":[");
  if (cols_at == std::string::npos || rows_at == std::string::npos) return out;
  const std::string cols = json.substr(cols_at, rows_at - cols_at);
  int index = -1, i = 0;
  const std::regex col_re("\\{\"name\":\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(cols.begin(), cols.end(), col_re);
       it != std::sregex_iterator(); ++it, ++i)
    if ((*it)[1] == name) index = i;
  const auto rows_end = json.find("],\"decisions\"", rows_at);
  const std::string rows = json.substr(rows_at + 8, rows_end - rows_at - 8);
  const auto last_open = rows.rfind('[');
  if (last_open == std::string::npos || index < 0) return out;
  std::vector<std::string> fields;
  std::string cur;
  for (char ch : rows.substr(last_open + 1)) {
    if (ch == ',' || ch == ']') {
      fields.push_back(cur);
      cur.clear();
      if (ch == ']') break;
    } else {
      cur += ch;
    }
  }
  if (fields.size() < static_cast<std::size_t>(index) + 3) return out;
  out.seq = std::stoll(fields[0]);
  const std::string& v = fields[static_cast<std::size_t>(index) + 2];
  out.value = v == "null" ? -1 : std::stod(v);
  return out;
}

const std::string tasks = "/threads{locality#0/total}/count/cumulative";

TEST(Dashboard, JsonValuesChangeWhileTheProgramRuns) {
  grain::runtime rt({"--grain:threads=2", "--grain:dashboard=0"}, false);
  const int port = grain::dashboard::bound_port();
  ASSERT_GT(port, 0);
  busy_program busy;
  // Wait for a first sample with tasks in it, then for a later one with more: each fetch is
  // a separate HTTP request while the program runs.
  last_row first, second;
  for (int n = 0; n < 100 && first.value <= 0; ++n) {
    first = read_last(get(port, "/data.json"), tasks);
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_GT(first.value, 0) << "no sample with completed tasks after 5 s";
  for (int n = 0; n < 100 && second.value <= first.value; ++n) {
    std::this_thread::sleep_for(50ms);
    second = read_last(get(port, "/data.json"), tasks);
  }
  EXPECT_GT(second.seq, first.seq);
  EXPECT_GT(second.value, first.value);
  // Asking from the last row on returns only newer rows.
  const std::string newer = get(port, "/data.json?rows=" + std::to_string(second.seq));
  const last_row third = read_last(newer, tasks);
  EXPECT_TRUE(third.seq == -1 || third.seq > second.seq) << newer.substr(0, 300);
}

// The sums the idle rate, t_d and t_o are made of come along as hidden columns (the page
// plots those averages per sampling interval from them, docs/dashboard.md); the averages are
// plotted, the sums are not.
TEST(Dashboard, SumsBehindTheAveragesAreHiddenColumns) {
  grain::runtime rt({"--grain:threads=1", "--grain:dashboard=0"}, false);
  const int port = grain::dashboard::bound_port();
  ASSERT_GT(port, 0);
  std::string json;
  for (int n = 0; n < 100 && json.find("time/overall") == std::string::npos; ++n) {
    std::this_thread::sleep_for(50ms);
    json = get(port, "/data.json");
  }
  for (const char* sum : {"time/overall", "time/cumulative"})
    EXPECT_NE(json.find(std::string("\"/threads{locality#0/total}/") + sum +
                        "\",\"unit\":\"ns\",\"knob\":false,\"rate\":true,\"hidden\":true}"),
              std::string::npos)
        << sum << " in " << json.substr(0, 1500);
  EXPECT_NE(json.find("\"/threads{locality#0/total}/idle-rate\",\"unit\":\"ratio\",\"knob\":false,"
                      "\"rate\":false}"),
            std::string::npos)
      << json.substr(0, 1500);
}

TEST(Dashboard, DecisionsArriveWithTheirReason) {
  grain::runtime rt({"--grain:threads=1", "--grain:dashboard=0"}, false);
  const int port = grain::dashboard::bound_port();
  ASSERT_GT(port, 0);
  auto& k = grain::knobs().define_int("test.dashboard.grain", 1, 1'000'000, 10,
                                      "a knob of the dashboard test");
  const std::string before = get(port, "/data.json");
  EXPECT_EQ(before.find("because \\\"the test\\\" says so"), std::string::npos);
  k.set(5000, "because \"the test\" says so", "dashboard-test");
  std::string after;
  for (int n = 0; n < 100; ++n) {
    after = get(port, "/data.json");
    if (after.find("\"knob\":\"test.dashboard.grain\",\"rule\"") != std::string::npos &&
        read_last(after, "test.dashboard.grain").value == 5000)
      break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(after.find("\"rule\":\"dashboard-test\",\"old\":10,\"new\":5000"), std::string::npos)
      << after.substr(after.find("\"decisions\""));
  EXPECT_NE(after.find("because \\\"the test\\\" says so"), std::string::npos);
  EXPECT_EQ(read_last(after, "test.dashboard.grain").value, 5000);
  k.set(10, "back", "dashboard-test");
}

TEST(Dashboard, PageDrawsPlotsWithNothingFromElsewhere) {
  grain::runtime rt({"--grain:threads=1", "--grain:dashboard=0"}, false);
  const int port = grain::dashboard::bound_port();
  ASSERT_GT(port, 0);
  int status = 0;
  const std::string page = get(port, "/", &status);
  EXPECT_EQ(status, 200);
  EXPECT_NE(page.find("createElement(\"canvas\")"), std::string::npos);
  EXPECT_NE(page.find("getContext(\"2d\")"), std::string::npos);
  EXPECT_NE(page.find("setTimeout(poll, Math.max(0, POLL_MS - "), std::string::npos);
  EXPECT_NE(page.find("POLL_MS = 200"), std::string::npos);
  EXPECT_EQ(page.find("<table"), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  get(port, "/data.json?rows=abc", &status);
  EXPECT_EQ(status, 400);
  get(port, "/nothing-here", &status);
  EXPECT_EQ(status, 404);
}

TEST(Dashboard, ServesOnLoopbackOnly) {
  grain::runtime rt({"--grain:threads=1", "--grain:dashboard=0"}, false);
  const int port = grain::dashboard::bound_port();
  ASSERT_GT(port, 0);
  // The listening socket is bound to 127.0.0.1: its address, read back, is loopback.
  const std::string ss = "ss -ltnH 'sport = :" + std::to_string(port) + "' 2>/dev/null";
  std::FILE* p = popen(ss.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, p);
  pclose(p);
  const std::string out(buf, n);
  if (out.empty()) GTEST_SKIP() << "ss (iproute2) cannot list sockets here";
  EXPECT_NE(out.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << out;
}

// A program started with a dashboard that cannot run says why and runs on.
std::string run_with(const std::string& option, bool& task_ran) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  {
    grain::runtime rt({"--grain:threads=1", option}, false);
    EXPECT_EQ(grain::dashboard::bound_port(), 0);
    task_ran = grain::async([] { return 42; }).get() == 42;
  }
  return ::testing::internal::GetCapturedStdout() + ::testing::internal::GetCapturedStderr();
}

TEST(Dashboard, PortOutOfRangeIsAnErrorAndTheProgramRuns) {
  for (const std::string bad : {"70000", "-1", "http", ""}) {
    bool ran = false;
    const std::string out = run_with("--grain:dashboard=" + bad, ran);
    EXPECT_TRUE(ran) << bad;
    EXPECT_NE(out.find("integer in 0..65535"), std::string::npos) << bad << ": " << out;
    EXPECT_NE(out.find("runs without the dashboard"), std::string::npos) << out;
  }
}

TEST(Dashboard, PortInUseIsAnErrorAndTheProgramRuns) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  bool ran = false;
  const std::string out = run_with("--grain:dashboard=" + std::to_string(port), ran);
  ::close(fd);
  EXPECT_TRUE(ran);
  EXPECT_NE(out.find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << out;
  EXPECT_NE(out.find("in use"), std::string::npos) << out;
}

TEST(Dashboard, CountsItsOwnCpuTime) {
  grain::runtime rt({"--grain:threads=1", "--grain:dashboard=0"}, false);
  const int port = grain::dashboard::bound_port();
  ASSERT_GT(port, 0);
  for (int i = 0; i < 5; ++i) get(port, "/data.json");
  const auto req = grain::instrumentation::registry().value("/dashboard/count/requests");
  ASSERT_TRUE(req.has_value());
  EXPECT_GE(req->value, 5);
  const auto cpu = grain::instrumentation::registry().value("/dashboard/time/cpu");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_GT(cpu->value, 0);
}

}  // namespace
