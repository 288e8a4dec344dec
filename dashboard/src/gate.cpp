// Accepting connections and holding them until their request is whole (gate.hpp).
#include "gate.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace grain::dashboard::detail {
namespace {

using clock = std::chrono::steady_clock;

struct waiting {
  int fd;
  clock::time_point deadline;
  std::string head;
};

enum class progress { whole, partial, gone };

// Reads what has arrived on a waiting connection (non-blocking).
progress read_more(waiting& w) {
  char buf[4096];
  for (;;) {
    const std::size_t room = gate::max_head_bytes - w.head.size();
    const ssize_t n = ::recv(w.fd, buf, std::min(room, sizeof buf), 0);
    if (n > 0) {
      w.head.append(buf, static_cast<std::size_t>(n));
      if (w.head.find("\r\n\r\n") != std::string::npos || w.head.size() >= gate::max_head_bytes)
        return progress::whole;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return progress::partial;
    if (n < 0 && errno == EINTR) continue;
    return progress::gone;  // closed before its request was whole, or an error
  }
}

}  // namespace

gate::gate() {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

gate::~gate() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

std::string gate::listen(int port) {
  const std::string where = "cannot listen on 127.0.0.1:" + std::to_string(port) + ": ";
  if (wake_fd_ < 0) return where + std::strerror(errno);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return where + std::strerror(errno);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int e = errno;
    ::close(fd);
    return where + std::strerror(e);
  }
  listen_fd_ = fd;
  port_ = ntohs(a.sin_port);
  return {};
}

void gate::stop() noexcept {
  const std::uint64_t one = 1;
  ssize_t r = ::write(wake_fd_, &one, sizeof one);
  (void)r;
}

void gate::run(const std::function<void(int fd, std::string head)>& ready) {
  std::vector<waiting> held;
  std::vector<pollfd> fds;
  // Out of file descriptors, the listening socket stays readable with nothing to accept: it
  // rests a while instead of spinning.
  clock::time_point accept_again{};
  for (;;) {
    const bool accepting = clock::now() >= accept_again;
    fds.assign(
        {{wake_fd_, POLLIN, 0}, {listen_fd_, static_cast<short>(accepting ? POLLIN : 0), 0}});
    for (const auto& w : held) fds.push_back({w.fd, POLLIN, 0});
    int timeout_ms = accepting ? -1 : 100;
    if (!held.empty()) {
      const auto first = std::min_element(
          held.begin(), held.end(),
          [](const waiting& x, const waiting& y) { return x.deadline < y.deadline; });
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(first->deadline - clock::now());
      const int until_first = static_cast<int>(std::max<std::int64_t>(0, left.count()));
      timeout_ms = timeout_ms < 0 ? until_first : std::min(timeout_ms, until_first);
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;

    // The waiting connections, in the order they came (fds[2 + i] is held[i]).
    const auto now = clock::now();
    std::vector<waiting> still;
    for (std::size_t i = 0; i < held.size(); ++i) {
      waiting& w = held[i];
      const progress p = fds[2 + i].revents != 0 ? read_more(w) : progress::partial;
      if (p == progress::whole) {
        ready(w.fd, std::move(w.head));
      } else if (p == progress::gone || now >= w.deadline) {
        ::close(w.fd);
      } else {
        still.push_back(std::move(w));
      }
    }
    held.swap(still);

    if (fds[1].revents == 0) continue;
    for (;;) {
      const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
          accept_again = clock::now() + std::chrono::milliseconds(100);
        break;  // EAGAIN: all taken
      }
      if (held.size() >= max_waiting) {
        ::close(held.front().fd);
        held.erase(held.begin());
      }
      held.push_back({c, clock::now() + request_deadline, {}});
    }
  }
  for (const auto& w : held) ::close(w.fd);
}

}  // namespace grain::dashboard::detail
