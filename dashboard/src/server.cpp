// The dashboard's HTTP server: the gate (gate.hpp) hands it connections whose request has
// arrived, cpp-httplib answers them on named threads whose CPU time is counted.
#include "server.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "gate.hpp"
#include "page.hpp"
#include "store.hpp"

namespace grain::dashboard::detail {
namespace {

std::uint64_t cpu_of(clockid_t c) {
  timespec ts{};
  if (clock_gettime(c, &ts) != 0) return 0;
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// The CPU clocks of the server's live threads, and the total of those that ended. A thread
// leaves (adding its final time) before it ends, so a reader never reads a dead thread's clock.
class thread_clocks {
 public:
  void enter() {
    clockid_t c{};
    if (pthread_getcpuclockid(pthread_self(), &c) != 0) return;
    std::lock_guard lk(m_);
    live_.push_back(c);
  }
  void leave() {
    clockid_t c{};
    if (pthread_getcpuclockid(pthread_self(), &c) != 0) return;
    std::lock_guard lk(m_);
    for (auto it = live_.begin(); it != live_.end(); ++it)
      if (*it == c) {
        ended_ns_ += cpu_of(c);
        live_.erase(it);
        break;
      }
  }
  std::uint64_t total() const {
    std::lock_guard lk(m_);
    std::uint64_t sum = ended_ns_;
    for (clockid_t c : live_) sum += cpu_of(c);
    return sum;
  }

 private:
  mutable std::mutex m_;
  std::vector<clockid_t> live_;
  std::uint64_t ended_ns_ = 0;
};

using clock = std::chrono::steady_clock;

// How long an HTTP thread may spend on one connection whose request has arrived: reading a
// body, writing the response to a client that does not read it.
constexpr std::chrono::milliseconds io_deadline{2000};

// A connection's bytes for httplib: the head the gate read, then the socket. Every wait ends at
// the connection's deadline, or at once when stop() shuts the socket down.
class connection_stream final : public httplib::Stream {
 public:
  connection_stream(int fd, std::string head)
      : fd_(fd), head_(std::move(head)), deadline_(clock::now() + io_deadline) {}

  bool is_readable() const override { return pos_ < head_.size() || wait(POLLIN); }
  bool is_writable() const override { return wait(POLLOUT); }

  ssize_t read(char* p, size_t n) override {
    if (pos_ < head_.size()) {
      const std::size_t k = std::min(n, head_.size() - pos_);
      std::memcpy(p, head_.data() + pos_, k);
      pos_ += k;
      return static_cast<ssize_t>(k);
    }
    while (wait(POLLIN)) {
      const ssize_t r = ::recv(fd_, p, n, 0);
      if (r >= 0 || (errno != EINTR && errno != EAGAIN)) return r;
    }
    return -1;
  }

  ssize_t write(const char* p, size_t n) override {
    while (wait(POLLOUT)) {
      const ssize_t r = ::send(fd_, p, n, MSG_NOSIGNAL);
      if (r >= 0 || (errno != EINTR && errno != EAGAIN)) return r;
    }
    return -1;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address(::getsockname, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  // Ready for `events` (or failed, which the next call reports) before the deadline.
  bool wait(short events) const {
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left.count()));
      if (r > 0) return true;
      if (r == 0 || errno != EINTR) return false;
    }
  }

  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    char text[INET_ADDRSTRLEN] = {};
    if (get(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 || a.sin_family != AF_INET ||
        !::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text))
      return;
    ip = text;
    port = ntohs(a.sin_port);
  }

  int fd_;
  std::string head_;
  std::size_t pos_ = 0;
  clock::time_point deadline_;
};

// httplib's request handling, on a connection whose request the gate has read.
class http_server final : public httplib::Server {
 public:
  void serve(int fd, std::string head) {
    connection_stream s(fd, std::move(head));
    bool closed = false;
    process_request(s, /*close_connection=*/true, closed, nullptr);
  }
};

// The HTTP threads, named and CPU-counted, and their bounded queue of connections with a whole
// request. Two threads: a request costs them only its answer (the gate did the waiting), so two
// serve a page and a second client (a test, another tab) at once. A connection beyond
// max_queued is closed unanswered, and stop() shuts down the ones being answered.
class http_workers {
 public:
  static constexpr std::size_t max_queued = 64;

  http_workers(thread_clocks& clocks, unsigned n, http_server& http)
      : clocks_(clocks), http_(http) {
    for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
  }

  void submit(int fd, std::string head) {
    {
      std::lock_guard lk(m_);
      if (!stopping_ && jobs_.size() < max_queued) {
        jobs_.emplace_back(fd, std::move(head));
        cv_.notify_one();
        return;
      }
    }
    ::close(fd);
  }

  void stop() {
    {
      std::lock_guard lk(m_);
      stopping_ = true;
      for (auto& j : jobs_) ::close(j.first);
      jobs_.clear();
      for (int fd : serving_) ::shutdown(fd, SHUT_RDWR);
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void run() {
    pthread_setname_np(pthread_self(), "grain-dash-http");
    clocks_.enter();
    for (;;) {
      std::pair<int, std::string> job;
      {
        std::unique_lock lk(m_);
        cv_.wait(lk, [&] { return stopping_ || !jobs_.empty(); });
        if (stopping_) break;
        job = std::move(jobs_.front());
        jobs_.pop_front();
        serving_.push_back(job.first);
      }
      http_.serve(job.first, std::move(job.second));
      {
        // Under the lock: stop() must not shut down a number the system has given again.
        std::lock_guard lk(m_);
        serving_.erase(std::find(serving_.begin(), serving_.end(), job.first));
        ::shutdown(job.first, SHUT_RDWR);
        ::close(job.first);
      }
    }
    clocks_.leave();
  }

  thread_clocks& clocks_;
  http_server& http_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::pair<int, std::string>> jobs_;
  std::vector<int> serving_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

// ?NAME=N as an unsigned integer; absent: 0; anything else: false.
bool param(const httplib::Request& req, const char* name, std::uint64_t& out) {
  out = 0;
  if (!req.has_param(name)) return true;
  const std::string v = req.get_param_value(name);
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size() && !v.empty();
}

}  // namespace

struct server::impl {
  explicit impl(const store& s) : data(s) {}
  const store& data;
  http_server http;
  thread_clocks clocks;
  gate front;
  std::unique_ptr<http_workers> workers;
  std::thread listener;
  std::atomic<int> port{0};
  std::atomic<std::uint64_t> requests{0};
};

server::server(const store& s) : impl_(std::make_unique<impl>(s)) {
  auto* i = impl_.get();
  // Nothing the dashboard serves takes a body.
  i->http.set_payload_max_length(64 * 1024);
  i->http.Get("/", [i](const httplib::Request&, httplib::Response& res) {
    i->requests.fetch_add(1, std::memory_order_relaxed);
    res.set_header("Cache-Control", "no-store");
    res.set_content(page_html(), "text/html; charset=utf-8");
  });
  i->http.Get("/data.json", [i](const httplib::Request& req, httplib::Response& res) {
    const std::uint64_t served = i->requests.fetch_add(1, std::memory_order_relaxed) + 1;
    std::uint64_t rows = 0, decisions = 0;
    if (!param(req, "rows", rows) || !param(req, "decisions", decisions)) {
      res.status = 400;
      res.set_content("rows and decisions are unsigned integers (the last ones received)\n",
                      "text/plain");
      return;
    }
    res.set_header("Cache-Control", "no-store");
    // Not "application/json": httplib compresses that one with Brotli at its highest quality
    // when the browser accepts it, 10 ms of CPU per poll; this type is sent as is.
    std::string body = i->data.json(rows, decisions);
    // Requests answered so far, this one included: a watcher's poll rate (scripts/bench-dashboard).
    body.insert(1, "\"requests\":" + std::to_string(served) + ",");
    res.set_content(body, "application/json; charset=utf-8");
  });
}

server::~server() {
  stop();
}

std::string server::bind(int port) {
  if (std::string why = impl_->front.listen(port); !why.empty()) return why;
  impl_->port.store(impl_->front.port());
  return {};
}

void server::start() {
  auto* i = impl_.get();
  i->workers = std::make_unique<http_workers>(i->clocks, 2, i->http);
  i->listener = std::thread([i] {
    pthread_setname_np(pthread_self(), "grain-dash-accept");
    i->clocks.enter();
    i->front.run([i](int fd, std::string head) { i->workers->submit(fd, std::move(head)); });
    i->clocks.leave();
  });
}

// Immediate whatever the clients do: the gate closes the connections still arriving, the HTTP
// threads' sockets are shut down under them.
void server::stop() {
  if (!impl_->listener.joinable()) return;
  impl_->front.stop();
  impl_->listener.join();
  impl_->workers->stop();
}

int server::port() const noexcept {
  return impl_->port.load();
}

std::uint64_t server::cpu_ns() const {
  return impl_->clocks.total();
}

std::uint64_t server::requests() const noexcept {
  return impl_->requests.load(std::memory_order_relaxed);
}

}  // namespace grain::dashboard::detail
