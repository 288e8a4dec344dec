// The dashboard's HTTP server (cpp-httplib), its named threads and their CPU time.
#include "server.hpp"

#include <errno.h>
#include <httplib.h>
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

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

// httplib's connection queue with threads of our own (named, CPU counted). Two threads: a
// page keeps one connection alive while a second client (a test, another tab) is served.
class named_pool final : public httplib::TaskQueue {
 public:
  named_pool(thread_clocks& clocks, unsigned n) : clocks_(clocks) {
    for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lk(m_);
      jobs_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard lk(m_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void run() {
    pthread_setname_np(pthread_self(), "grain-dash-http");
    clocks_.enter();
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lk(m_);
        cv_.wait(lk, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) break;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
    clocks_.leave();
  }

  thread_clocks& clocks_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
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
  httplib::Server http;
  thread_clocks clocks;
  std::thread listener;
  std::atomic<int> port{0};
  std::atomic<std::uint64_t> requests{0};
};

server::server(const store& s) : impl_(std::make_unique<impl>(s)) {
  auto* i = impl_.get();
  i->http.new_task_queue = [i] { return new named_pool(i->clocks, 2); };
  // One request per connection: httplib waits for a kept-alive connection's next request by
  // polling every 10 ms, which cost a watched program 1.3 % of a core (scripts/bench-dashboard);
  // a new loopback connection every 200 ms costs far less.
  i->http.set_keep_alive_max_count(1);
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
  errno = 0;
  int bound = -1;
  if (port == 0) {
    bound = impl_->http.bind_to_any_port("127.0.0.1");
  } else if (impl_->http.bind_to_port("127.0.0.1", port)) {
    bound = port;
  }
  if (bound <= 0) {
    const int e = errno;
    std::string why = "cannot listen on 127.0.0.1:" + std::to_string(port);
    if (e != 0) why += std::string(": ") + std::strerror(e);
    return why;
  }
  impl_->port.store(bound);
  return {};
}

void server::start() {
  auto* i = impl_.get();
  i->listener = std::thread([i] {
    pthread_setname_np(pthread_self(), "grain-dash-accept");
    i->clocks.enter();
    i->http.listen_after_bind();
    i->clocks.leave();
  });
  // httplib's stop() does nothing before listen has begun: wait for it (a bind succeeded, so
  // it begins at once), so that an early stop() cannot leave the thread listening.
  for (int n = 0; n < 50'000 && !i->http.is_running(); ++n)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
}

void server::stop() {
  if (!impl_->listener.joinable()) return;
  impl_->http.stop();
  impl_->listener.join();
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
