// The dashboard against clients that open connections and send nothing, or half a request: they
// must neither starve other clients nor hold the program at its end.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "grain/dashboard/extension.hpp"
#include "grain/runtime.hpp"

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// A client socket connected to the dashboard, closed with the object.
class raw_connection {
 public:
  explicit raw_connection(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~raw_connection() {
    if (fd_ >= 0) ::close(fd_);
  }
  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  bool connected() const { return connected_; }
  void send(const std::string& s) { (void)!::send(fd_, s.data(), s.size(), MSG_NOSIGNAL); }
  // Seconds until the server closed the connection, or nullopt if it did not within `limit`.
  std::optional<double> seconds_until_closed(std::chrono::seconds limit) {
    timeval tv{static_cast<time_t>(limit.count()), 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const auto t0 = steady::now();
    char buf[256];
    while (::recv(fd_, buf, sizeof buf, 0) > 0) {
    }
    const double s = std::chrono::duration<double>(steady::now() - t0).count();
    if (s >= static_cast<double>(limit.count())) return std::nullopt;
    return s;
  }

 private:
  int fd_;
  bool connected_ = false;
};

// Idle connections (a browser's preconnects, a stalled client) and requests sent halfway.
std::vector<std::unique_ptr<raw_connection>> open_stalled(int port, int idle, int half_sent) {
  std::vector<std::unique_ptr<raw_connection>> v;
  for (int i = 0; i < idle + half_sent; ++i) {
    v.push_back(std::make_unique<raw_connection>(port));
    EXPECT_TRUE(v.back()->connected());
    if (i >= idle) v.back()->send("GET /data.json HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  }
  return v;
}

int status_of_get(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(3, 0);
  c.set_read_timeout(3, 0);
  auto r = c.Get(path);
  return r ? r->status : -1;
}

// 80 idle connections (more than the 64 the dashboard keeps waiting) and 8 half-sent requests:
// every GET is still answered, within the client's 3 s (with two HTTP threads each held 5 s
// by a stalled connection, a GET behind 2 of them took 4 s and behind 8 timed out).
TEST(DashboardConnections, StalledClientsDoNotStarveOthers) {
  grain::runtime rt({"--grain:threads=1", "--grain:dashboard=0"}, false);
  const int port = grain::dashboard::bound_port();
  ASSERT_GT(port, 0);
  const auto stalled = open_stalled(port, 80, 8);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(status_of_get(port, "/data.json"), 200) << "request " << i;
    EXPECT_EQ(status_of_get(port, "/"), 200) << "request " << i;
  }
}

// The program ends promptly with stalled connections open (it waited for them: 3 s and more).
// The bound only tells waiting from not waiting; the end takes milliseconds.
TEST(DashboardConnections, StalledClientsDoNotHoldTheEnd) {
  std::vector<std::unique_ptr<raw_connection>> stalled;
  auto rt = std::make_unique<grain::runtime>(
      std::vector<std::string>{"--grain:threads=1", "--grain:dashboard=0"}, false);
  const int port = grain::dashboard::bound_port();
  ASSERT_GT(port, 0);
  stalled = open_stalled(port, 4, 4);
  std::this_thread::sleep_for(200ms);  // the server has taken them in
  const auto t0 = steady::now();
  rt.reset();
  EXPECT_LT(std::chrono::duration<double>(steady::now() - t0).count(), 1.5);
  // And it closed them.
  for (auto& c : stalled) EXPECT_TRUE(c->seconds_until_closed(5s).has_value());
}

// A connection whose request never arrives is closed by the server after its 5 s.
TEST(DashboardConnections, ConnectionWithoutARequestIsClosed) {
  grain::runtime rt({"--grain:threads=1", "--grain:dashboard=0"}, false);
  const int port = grain::dashboard::bound_port();
  ASSERT_GT(port, 0);
  raw_connection idle(port);
  raw_connection half(port);
  half.send("GET / HTTP/1.1\r\n");
  const auto a = idle.seconds_until_closed(15s);
  const auto b = half.seconds_until_closed(15s);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_GE(*a, 4.0);
  EXPECT_EQ(status_of_get(port, "/"), 200);
}

}  // namespace
