// The watch over the other ranks' processes (peer_watch.hpp).
#include "peer_watch.hpp"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace grain::distributed {

namespace {

struct proc_stat {
  bool exists = false;
  char state = '?';
  std::uint64_t start_ticks = 0;
};

// /proc/PID/stat: "pid (comm) state ppid ... starttime(22) ..."; comm may hold spaces and
// parentheses, so fields are counted after its last ')'.
proc_stat read_stat(std::uint64_t pid) {
  proc_stat s;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return s;
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return s;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  // Field 3 is the state; field 22 the start time.
  for (int k = 3; k <= 22 && rest >> field; ++k) {
    if (k == 3) s.state = field.empty() ? '?' : field[0];
    if (k == 22) {
      s.start_ticks = std::strtoull(field.c_str(), nullptr, 10);
      s.exists = true;
    }
  }
  return s;
}

}  // namespace

process_identity this_process() {
  process_identity p;
  p.pid = static_cast<std::uint64_t>(::getpid());
  p.start_ticks = read_stat(p.pid).start_ticks;
  if (::gethostname(p.host, sizeof p.host - 1) != 0) std::strcpy(p.host, "?");
  p.host[sizeof p.host - 1] = '\0';
  return p;
}

bool process_alive(const process_identity& p) {
  const proc_stat s = read_stat(p.pid);
  if (!s.exists) return false;
  if (s.state == 'Z' || s.state == 'X' || s.state == 'x') return false;
  return p.start_ticks == 0 || s.start_ticks == p.start_ticks;
}

peer_watch::peer_watch(std::uint32_t self, std::vector<process_identity> peers,
                       std::function<void(std::uint32_t rank)> on_dead,
                       std::function<void()> on_grace_over, std::uint64_t period_ms,
                       std::uint64_t grace_ms)
    : peers_(std::move(peers)),
      on_dead_(std::move(on_dead)),
      on_grace_over_(std::move(on_grace_over)),
      period_ms_(period_ms),
      grace_ms_(grace_ms) {
  const process_identity me = this_process();
  for (std::uint32_t r = 0; r < peers_.size(); ++r)
    if (r != self && std::strncmp(peers_[r].host, me.host, sizeof me.host) == 0 &&
        peers_[r].pid != 0)
      watched_.push_back(r);
  if (!watched_.empty()) thread_ = std::thread([this] { run(); });
}

peer_watch::~peer_watch() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void peer_watch::run() {
  pthread_setname_np(pthread_self(), "grain-peers");
  std::vector<std::uint32_t> left = watched_;
  using clock = std::chrono::steady_clock;
  clock::time_point deadline = clock::time_point::max();
  std::unique_lock lock(m_);
  for (;;) {
    if (cv_.wait_for(lock, std::chrono::milliseconds(period_ms_), [this] { return stop_; })) return;
    lock.unlock();
    for (auto it = left.begin(); it != left.end();) {
      if (process_alive(peers_[*it])) {
        ++it;
        continue;
      }
      const std::uint32_t dead = *it;
      it = left.erase(it);
      if (deadline == clock::time_point::max())
        deadline = clock::now() + std::chrono::milliseconds(grace_ms_);
      on_dead_(dead);
    }
    if (clock::now() >= deadline) {
      on_grace_over_();
      return;
    }
    lock.lock();
  }
}

}  // namespace grain::distributed
